/**
 * `BOOTWRIGHT_TLS=auto` (issue 16): a private CA and a serving certificate it issued,
 * kept under `<dataDir>/tls/` (every file mode 0600, the directory 0700), generated with
 * @peculiar/x509 over Node's WebCrypto (Node's crypto makes keys but not certificates).
 *
 * - The CA (`ca.crt`, `ca.key`) is made once and kept: machines and images trust it, and
 *   pointer configs pin it, so it must outlive restarts. ECDSA P-256, 10 years,
 *   `basicConstraints: CA, pathlen 0`, `keyUsage: keyCertSign, cRLSign` (RFC 5280 §4.2.1).
 * - The serving certificate (`server.crt`, `server.key`) is reissued at start when it is
 *   missing, not issued by that CA, within {@link RENEW_BEFORE_DAYS} of expiry, or does not
 *   name every host asked for: ECDSA P-256, {@link SERVING_DAYS} days, `subjectAltName`
 *   with an `iPAddress` entry for an IP and a `dNSName` for a name (RFC 6125: clients match
 *   the SAN, not the CN), `extendedKeyUsage: serverAuth`.
 *
 * The CA key is needed only to issue a serving certificate. An operator may move `ca.key`
 * off the machine once the serving certificate exists (an offline CA): starts go on
 * without it while the serving certificate is valid and names every host asked for
 * (within {@link RENEW_BEFORE_DAYS} of its expiry with a warning, `renewalDue`), and a
 * start that must issue one stops, asking for the key back for that start.
 *
 * ECDSA keeps the CA small: a pointer config carrying it inline stays well under a kernel
 * command line or a 16 KiB user-data limit. Firmware whose TLS stack only speaks RSA
 * (iPXE builds before its ECDSA support) needs an operator certificate instead
 * (`BOOTWRIGHT_TLS_CERT`); docs/operating.md says so.
 */
import 'reflect-metadata';
import { randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { AsnConvert } from '@peculiar/asn1-schema';
import { GeneralName, GeneralSubtree, GeneralSubtrees, id_ce_nameConstraints, NameConstraints } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** The directory under the data directory. */
export const TLS_DIR = 'tls';
/** Lifetime of a generated CA, days: two years (a CA made before 0.2.0 had ten). */
export const CA_DAYS = 730;
/** Lifetime of a generated serving certificate, days. */
export const SERVING_DAYS = 365;
/** A serving certificate this close to expiry is reissued at start, days. */
export const RENEW_BEFORE_DAYS = 30;

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

/** The generated files, as PEM text, and where they are. */
export interface AutoTls {
  /** The CA certificate (PEM): what `GET /ca.crt` serves and pointer configs pin. */
  caPem: string;
  /** `<dataDir>/tls/server.crt`: the serving certificate, then the CA. */
  certFile: string;
  /** `<dataDir>/tls/server.key`: its PKCS #8 private key. */
  keyFile: string;
  /** `<dataDir>/tls/ca.crt`. */
  caFile: string;
  /** What this call generated. */
  created: { ca: boolean; serving: boolean };
  /** Whether the CA carries name constraints (one made before 0.2.0 does not: rotate it). */
  constrained: boolean;
  /** Whether `ca.key` is in the directory (false: an offline CA). */
  caKeyOnline: boolean;
  /** With an offline CA key: the serving certificate is within {@link RENEW_BEFORE_DAYS} of expiry (put the key back for one start). */
  renewalDue: boolean;
  /** When the serving certificate expires. */
  servingNotAfter: Date;
}

/** A CA that cannot sign for the hosts asked for: it must be rotated (docs/operating.md). */
export class CaRotationNeeded extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CaRotationNeeded';
  }
}

/**
 * The CA's name constraints (RFC 5280 §4.2.1.10, critical): it may sign only for `hosts`:
 * each DNS name (and names under it, as RFC 5280 reads a dNSName subtree) and each IP
 * address alone (`/32`, `/128`). An address family with no host is excluded whole (a
 * family with no permitted subtree would be unconstrained).
 */
export function nameConstraintsFor(hosts: readonly string[]): x509.Extension {
  const ips = hosts.filter((h) => isIP(h) !== 0);
  const permitted = hosts.map((h) => new GeneralSubtree({ base: new GeneralName(isIP(h) === 0 ? { dNSName: h } : { iPAddress: `${h}/${isIP(h) === 4 ? 32 : 128}` }) }));
  const excluded = [...(ips.some((h) => isIP(h) === 4) ? [] : ['0.0.0.0/0']), ...(ips.some((h) => isIP(h) === 6) ? [] : ['::/0'])].map((net) => new GeneralSubtree({ base: new GeneralName({ iPAddress: net }) }));
  const value = new NameConstraints({ permittedSubtrees: new GeneralSubtrees(permitted), ...(excluded.length > 0 ? { excludedSubtrees: new GeneralSubtrees(excluded) } : {}) });
  return new x509.Extension(id_ce_nameConstraints, true, AsnConvert.serialize(value));
}

/** The hosts a CA's name constraints permit, or undefined when it has none. */
export function permittedHosts(ca: x509.X509Certificate): { dns: string[]; ips: string[] } | undefined {
  const ext = ca.getExtension(id_ce_nameConstraints);
  if (!ext) return undefined;
  const nc = AsnConvert.parse(ext.value, NameConstraints);
  const out = { dns: [] as string[], ips: [] as string[] };
  for (const sub of nc.permittedSubtrees ? [...nc.permittedSubtrees] : []) {
    if (sub.base.dNSName !== undefined) out.dns.push(sub.base.dNSName.toLowerCase());
    if (sub.base.iPAddress !== undefined) out.ips.push(sub.base.iPAddress.replace(/\/\d+$/, ''));
  }
  return out;
}

/** An IP address in one spelling (IPv6 compressed, lower case, as WHATWG's URL parser writes it). */
const canonicalIp = (ip: string) => (isIP(ip) === 6 ? new URL(`http://[${ip}]`).hostname : ip);

/** Whether a constrained CA may sign for `host`. */
function permits(permitted: { dns: string[]; ips: string[] }, host: string): boolean {
  if (isIP(host) !== 0) return permitted.ips.some((ip) => canonicalIp(ip) === canonicalIp(host));
  const h = host.toLowerCase();
  return permitted.dns.some((d) => h === d || h.endsWith(`.${d}`));
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

/** Write `text` to `file` (mode 0600) so a reader never sees a partial file. */
function writePrivate(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, text, { mode: 0o600 });
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

function readOrUndefined(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** A positive serial number, 16 random bytes (RFC 5280 §4.1.2.2: at most 20 octets, positive). */
function serial(): string {
  const b = randomBytes(16);
  b[0] = b[0]! & 0x7f;
  return b.toString('hex');
}

async function newKeys(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
}

async function importKey(pkcs8Pem: string): Promise<webcrypto.CryptoKey> {
  const der = Buffer.from(pkcs8Pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  return webcrypto.subtle.importKey('pkcs8', der, ALGORITHM, false, ['sign']);
}

/** Whether `cert` (PEM) names `host` in its subjectAltName (an IP as `IP Address:`, a name as `DNS:`). */
export function namesHost(cert: X509Certificate, host: string): boolean {
  return isIP(host) ? cert.checkIP(host) !== undefined : cert.checkHost(host, { subject: 'never', wildcards: false }) !== undefined;
}

/**
 * The hosts a serving certificate must name: the public URL's host, the listen address
 * unless it is a wildcard, and `localhost` (so the machine itself can reach it).
 *
 * @param publicUrl `BOOTWRIGHT_PUBLIC_URL`, if set
 * @param listenHost `BOOTWRIGHT_HOST`
 * @returns host names and IP addresses (IPv6 without brackets), no duplicates, in that order
 */
export function servingHosts(publicUrl: string | undefined, listenHost: string): string[] {
  const hosts: string[] = [];
  if (publicUrl !== undefined) hosts.push(new URL(publicUrl).hostname.replace(/^\[(.*)\]$/, '$1'));
  if (listenHost !== '0.0.0.0' && listenHost !== '::' && listenHost !== '') hosts.push(listenHost);
  hosts.push('localhost');
  return [...new Set(hosts)];
}

/**
 * The CA and serving certificate under `<dataDir>/tls/`: read, or generated as the
 * module comment says.
 *
 * @param dataDir the data directory (created, mode 0700, when missing)
 * @param hosts what the serving certificate must name ({@link servingHosts}); at least one
 * @param now the current time (tests)
 * @throws Error when a kept CA file cannot be parsed (it is never replaced silently: the
 *   machines trusting it would stop booting), when `ca.key` is there without `ca.crt`,
 *   when a serving certificate must be issued and `ca.key` is offline, or for
 *   file-system errors
 */
export async function ensureAutoTls(dataDir: string, hosts: readonly string[], now: Date = new Date()): Promise<AutoTls> {
  if (hosts.length === 0) throw new TypeError('at least one host is needed');
  const dir = join(dataDir, TLS_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const caFile = join(dir, 'ca.crt');
  const caKeyFile = join(dir, 'ca.key');
  const certFile = join(dir, 'server.crt');
  const keyFile = join(dir, 'server.key');
  const created = { ca: false, serving: false };

  let caPem = readOrUndefined(caFile);
  let caKeyPem = readOrUndefined(caKeyFile);
  let caKey: webcrypto.CryptoKey | undefined;
  let ca: x509.X509Certificate;
  if (caPem === undefined) {
    if (caKeyPem !== undefined) throw new Error(`${dir}: ca.key is there without ca.crt; restore ca.crt (machines trust this CA)`);
    const keys = await newKeys();
    ca = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: `CN=bootwright CA ${randomBytes(4).toString('hex')}`,
      notBefore: new Date(now.getTime() - 60_000),
      notAfter: new Date(now.getTime() + CA_DAYS * DAY_MS),
      keys,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        nameConstraintsFor(hosts),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    caPem = ca.toString('pem') + '\n';
    caKeyPem = pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
    writePrivate(caKeyFile, caKeyPem);
    writePrivate(caFile, caPem);
    caKey = keys.privateKey;
    created.ca = true;
  } else {
    try {
      ca = new x509.X509Certificate(caPem);
      caKey = caKeyPem === undefined ? undefined : await importKey(caKeyPem);
    } catch (e) {
      throw new Error(`${dir}: the kept CA cannot be read (${(e as Error).message}); restore ca.crt and ca.key (machines trust this CA)`, { cause: e });
    }
  }

  const permitted = permittedHosts(ca);
  const outside = permitted ? hosts.filter((h) => !permits(permitted, h)) : [];
  if (outside.length > 0) {
    throw new CaRotationNeeded(`${dir}: the CA may sign only for ${[...permitted!.dns, ...permitted!.ips].join(', ')}, not ${outside.join(', ')}: rotate it (docs/operating.md, "Rotating the generated CA")`);
  }
  if (ca.notAfter.getTime() <= now.getTime()) throw new CaRotationNeeded(`${dir}: the CA expired on ${ca.notAfter.toISOString()}: rotate it (docs/operating.md, "Rotating the generated CA")`);

  const caNode = new X509Certificate(caPem);
  const servingPem = readOrUndefined(certFile);
  const servingKey = readOrUndefined(keyFile);
  /** Why the kept serving certificate cannot be used as is ('' when it can), and when it expires. */
  let why = 'it is missing';
  let usable = false;
  let servingNotAfter = new Date(0);
  if (servingPem !== undefined && servingKey !== undefined) {
    try {
      const cert = new X509Certificate(servingPem);
      servingNotAfter = new Date(cert.validTo);
      const left = servingNotAfter.getTime() - now.getTime();
      if (!cert.checkIssued(caNode) || !cert.verify(caNode.publicKey)) why = 'the CA did not issue it';
      else if (!hosts.every((h) => namesHost(cert, h))) why = `it does not name ${hosts.filter((h) => !namesHost(cert, h)).join(', ')}`;
      else if (left <= 0) why = `it expired on ${servingNotAfter.toISOString()}`;
      else {
        usable = true;
        why = left > RENEW_BEFORE_DAYS * DAY_MS ? '' : `it expires on ${servingNotAfter.toISOString()}`;
      }
    } catch {
      why = 'it cannot be read';
    }
  }
  let renewalDue = false;
  if (why !== '' && caKey === undefined) {
    if (!usable) throw new Error(`${dir}: a serving certificate must be issued (${why}) and ca.key is offline: put it back in ${dir} for this start (docs/operating.md, "Keeping the CA key offline")`);
    renewalDue = true;
  } else if (why !== '' && caKey !== undefined) {
    const keys = await newKeys();
    const leaf = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${hosts[0]!}`,
      issuer: ca.subject,
      notBefore: new Date(now.getTime() - 60_000),
      notAfter: new Date(Math.min(now.getTime() + SERVING_DAYS * DAY_MS, ca.notAfter.getTime())),
      signingKey: caKey,
      publicKey: keys.publicKey,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension(hosts.map((h) => (isIP(h) ? { type: 'ip' as const, value: h } : { type: 'dns' as const, value: h }))),
        await x509.AuthorityKeyIdentifierExtension.create(ca),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    // Key first: a reader that sees the new certificate also finds its key.
    writePrivate(keyFile, pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)));
    writePrivate(certFile, `${leaf.toString('pem')}\n${caPem}`);
    created.serving = true;
    servingNotAfter = leaf.notAfter;
  }
  return { caPem, certFile, keyFile, caFile, created, constrained: permitted !== undefined, caKeyOnline: caKey !== undefined, renewalDue, servingNotAfter };
}
