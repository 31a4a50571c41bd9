import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeHexSetting, machineIdentity, normaliseHostname, normaliseMac, normaliseSerial, normaliseUuid } from '../../src/boot/identity.js';

describe('normaliseMac', () => {
  it('accepts colon, hyphen, Cisco-dot and bare forms in any case', () => {
    const want = '00:50:56:ab:cd:ef';
    for (const text of [
      '00:50:56:ab:cd:ef',
      '00:50:56:AB:CD:EF',
      '00-50-56-ab-cd-ef',
      '00-50-56-Ab-cD-eF',
      '0050.56ab.cdef',
      '0050.56AB.CDEF',
      '005056abcdef',
      '005056ABCDEF',
      '  00:50:56:ab:cd:ef\n',
    ]) {
      assert.equal(normaliseMac(text), want, text);
    }
  });

  it('accepts any non-zero 48-bit address, multicast and broadcast included', () => {
    assert.equal(normaliseMac('01-00-5E-00-00-FB'), '01:00:5e:00:00:fb');
    assert.equal(normaliseMac('ffff.ffff.ffff'), 'ff:ff:ff:ff:ff:ff');
    assert.equal(normaliseMac('02:00:00:00:00:01'), '02:00:00:00:00:01');
  });

  it('refuses all-zero and every other spelling', () => {
    for (const text of [
      '00:00:00:00:00:00',
      '000000000000',
      '0000.0000.0000',
      '',
      '00:50:56:ab:cd',
      '00:50:56:ab:cd:ef:01',
      '0:50:56:ab:cd:ef',
      '00:50-56:ab:cd:ef',
      '00.50.56.ab.cd.ef',
      '005056.abcdef',
      '00:50:56:ab:cd:eg',
      '005056abcdef0',
      '00 50 56 ab cd ef',
      '00:50:56:ab:cd:ef/',
    ]) {
      assert.equal(normaliseMac(text), undefined, JSON.stringify(text));
    }
  });
});

describe('normaliseUuid', () => {
  const want = '4c4c4544-0051-4410-8051-b3c04f4a4a32';

  it('accepts iPXE ${uuid} output, upper case and the bare form', () => {
    assert.equal(normaliseUuid('4c4c4544-0051-4410-8051-b3c04f4a4a32'), want);
    assert.equal(normaliseUuid('4C4C4544-0051-4410-8051-B3C04F4A4A32'), want);
    assert.equal(normaliseUuid('4c4c4544005144108051b3c04f4a4a32'), want);
    assert.equal(normaliseUuid(' 4C4C4544005144108051B3C04F4A4A32 '), want);
  });

  it('refuses nil, all-f, misplaced hyphens and other lengths', () => {
    for (const text of [
      '00000000-0000-0000-0000-000000000000',
      'ffffffff-ffff-ffff-ffff-ffffffffffff',
      'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF',
      '4c4c4544-00514410-8051-b3c04f4a4a32',
      '4c4c4544-0051-4410-8051-b3c04f4a4a3',
      '{4c4c4544-0051-4410-8051-b3c04f4a4a32}',
      '4c4c4544-0051-4410-8051-b3c04f4a4a3g',
      '',
    ]) {
      assert.equal(normaliseUuid(text), undefined, text);
    }
  });
});

describe('decodeHexSetting', () => {
  it('decodes iPXE :hex output (lower-case bytes joined by colons)', () => {
    assert.equal(decodeHexSetting('53:4e:20:34:32:2f:41:26:42'), 'SN 42/A&B');
    assert.equal(decodeHexSetting('6e:6f:64:65:2d:31'), 'node-1');
  });

  it('decodes :hexhyp and :hexraw output and upper case', () => {
    assert.equal(decodeHexSetting('53-4e-20-34-32'), 'SN 42');
    assert.equal(decodeHexSetting('534e203432'), 'SN 42');
    assert.equal(decodeHexSetting('53:4E:20:34:32'), 'SN 42');
  });

  it('decodes UTF-8 and keeps every byte of the value', () => {
    assert.equal(decodeHexSetting('c3:a9:3d:26:23:25:20:20'), 'é=&#%  ');
    assert.equal(decodeHexSetting('41'), 'A');
  });

  it('returns the empty string for an empty (unset) setting', () => {
    assert.equal(decodeHexSetting(''), '');
  });

  it('refuses what iPXE never prints and invalid UTF-8', () => {
    for (const text of ['5', '53:4', '53:4e-20', '53::4e', ':53', '53:', 'zz', '53 4e', 'c3:28', 'ff']) {
      assert.equal(decodeHexSetting(text), undefined, text);
    }
  });
});

describe('normaliseSerial and normaliseHostname', () => {
  it('trim serials but keep their case', () => {
    assert.equal(normaliseSerial('  SN 42/a  '), 'SN 42/a');
    assert.equal(normaliseSerial('   '), undefined);
  });

  it('lower-case host names and drop one trailing dot', () => {
    assert.equal(normaliseHostname('Node-1.Example.COM.'), 'node-1.example.com');
    assert.equal(normaliseHostname('.'), undefined);
  });
});

describe('machineIdentity', () => {
  it('builds the identity from the boot.ipxe query', () => {
    const query = new URLSearchParams(
      'mac=52-54-00-12-34-56&uuid=4C4C4544-0051-4410-8051-B3C04F4A4A32&serial_hex=53:4e:20:34:32:2f:41:26:42&hostname_hex=4e:6f:64:65:2d:31&buildarch=x86_64&platform=efi&rack=r12',
    );
    assert.deepEqual(machineIdentity(query), {
      mac: '52:54:00:12:34:56',
      uuid: '4c4c4544-0051-4410-8051-b3c04f4a4a32',
      serial: 'SN 42/A&B',
      hostname: 'node-1',
      buildarch: 'x86_64',
      platform: 'efi',
      labels: { rack: 'r12' },
      ignored: [],
    });
  });

  it('takes a fastify-style object, first value of a repeated parameter', () => {
    const id = machineIdentity({ mac: ['0050.56ab.cdef', '00:00:00:00:00:01'], serial: 'ABC123', hostname: 'Web-1.' });
    assert.equal(id.mac, '00:50:56:ab:cd:ef');
    assert.equal(id.serial, 'ABC123');
    assert.equal(id.hostname, 'web-1');
    assert.deepEqual(id.labels, {});
  });

  it('prefers serial_hex and hostname_hex over the text forms', () => {
    const id = machineIdentity(new URLSearchParams('serial=wrong&serial_hex=41:42&hostname=wrong&hostname_hex=68:31'));
    assert.equal(id.serial, 'AB');
    assert.equal(id.hostname, 'h1');
    assert.deepEqual(id.ignored, []);
  });

  it('falls back to the text form when the hex form is unusable, and says so', () => {
    const id = machineIdentity(new URLSearchParams('serial=SN1&serial_hex=zz'));
    assert.equal(id.serial, 'SN1');
    assert.deepEqual(id.ignored, ['serial_hex']);
  });

  it('treats empty values as not reported (iPXE expands unset settings to nothing)', () => {
    const id = machineIdentity(new URLSearchParams('mac=52-54-00-12-34-56&uuid=&serial_hex=&hostname_hex=&buildarch=x86_64&platform=pcbios'));
    assert.deepEqual(id, { mac: '52:54:00:12:34:56', buildarch: 'x86_64', platform: 'pcbios', labels: {}, ignored: [] });
  });

  it('lists unusable identity values and leaves them out', () => {
    const id = machineIdentity(new URLSearchParams('mac=00:00:00:00:00:00&uuid=not-a-uuid&serial_hex=c3:28'));
    assert.equal(id.mac, undefined);
    assert.equal(id.uuid, undefined);
    assert.equal(id.serial, undefined);
    assert.deepEqual(id.ignored, ['mac', 'uuid', 'serial_hex']);
  });

  it('keeps reserved parameters out of the labels, and valueless ones', () => {
    const id = machineIdentity(new URLSearchParams('machine=m1&exp=1&sig=x&format=ignition&zone=a&B&empty='));
    assert.deepEqual(id.labels, { zone: 'a' });
  });

  it('shows why serial_hex matters: an unescaped & splits a text serial', () => {
    // What a 2019 iPXE sends for ${serial:uristring} when the serial is "SN 42/A&B".
    const id = machineIdentity(new URLSearchParams('serial=SN%2042/A&B'));
    assert.equal(id.serial, 'SN 42/A');
    assert.deepEqual(id.labels, {});
  });

  it('takes a parameter named __proto__ as a plain label', () => {
    const id = machineIdentity(new URLSearchParams('__proto__=x&rack=1'));
    assert.deepEqual(Object.keys(id.labels), ['__proto__', 'rack']);
    assert.equal(Object.getPrototypeOf(id.labels), Object.prototype);
  });
});
