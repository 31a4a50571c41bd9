/**
 * Hard contents: file texts and commands that broke bootstrap-data generators (YAML
 * indicators, line endings, encodings, shell syntax), shared by the round-trip tests and
 * the real first boots.
 */
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';

/** Commands that break naive quoting: YAML indicators, shell syntax, heredocs, template braces. */
export const COMMANDS = [
  'echo key: value',
  'echo "# not a comment" # a comment',
  '* leading star is a shell glob here',
  'sleep 1 & wait',
  '! false',
  'printf "%s%%\\n" 100',
  `echo 'single' "double" \`backtick\``,
  'echo "$(hostname) ${HOME}"',
  "cat <<'EOF' > /etc/heredoc.txt\nline one: with colon\n  indented # hash\nEOF",
  'sed -i \'s/{{ .PodSubnet }}/192.168.0.0\\/16/\' /etc/cni/calico.yaml',
  '- leading dash',
  '{"json": "like"}',
  '[ -f /etc/flag ] && echo yes',
];

/** File contents that break naive serialisation, by name (`/etc/roundtrip/<name>.txt`). */
export const TEXTS: Record<string, string> = {
  'leading-spaces': '   indented first line\n  second\n',
  'no-trailing-newline': 'no newline at the end',
  'several-trailing-newlines': 'text\n\n\n\n',
  crlf: 'windows\r\nline endings\r\n',
  tabs: '\tkey:\tvalue\n\t\tdeeper\n',
  cjk: '日本語のテキスト、中文文本，한국어 텍스트\n',
  emoji: '🚀 deploy 🎉 done ✅\n',
  yes: 'yes',
  on: 'on',
  no: 'no',
  octal: '0644',
  tilde: '~',
  null: 'null',
  'long-line': `${'x'.repeat(150)} ${'y'.repeat(149)}\n`,
  'colon-hash': 'a: b # c\n- d\n? e\n',
  'only-newlines': '\n\n',
  empty: '',
  'one-mib': `${'0123456789abcdef'.repeat(64)}\n`.repeat(1024),
};

/** Bytes that are not text: random, with NUL, 0xff and CR LF. */
export const BINARY = Buffer.concat([randomBytes(4096), Buffer.from([0, 0xff, 0xfe, 0x0d, 0x0a])]);

/** Every hard content as a request file under /etc/roundtrip/: texts, binary, gzip. */
export function files(): { path: string; content: string; encoding?: string }[] {
  const list: { path: string; content: string; encoding?: string }[] = Object.entries(TEXTS).map(([name, content]) => ({ path: `/etc/roundtrip/${name}.txt`, content }));
  list.push({ path: '/etc/roundtrip/binary.bin', content: BINARY.toString('base64'), encoding: 'base64' });
  list.push({ path: '/etc/roundtrip/gzip.bin', content: gzipSync(BINARY).toString('base64'), encoding: 'gzip+base64' });
  list.push({ path: '/etc/roundtrip/gzip-text.txt', content: gzipSync(TEXTS['one-mib']!).toString('base64'), encoding: 'gzip+base64' });
  return list;
}

/** The bytes a node must end up with at `path` of {@link files}. */
export function expectedBytes(path: string): Buffer {
  if (path.endsWith('binary.bin') || path.endsWith('gzip.bin')) return BINARY;
  if (path.endsWith('gzip-text.txt')) return Buffer.from(TEXTS['one-mib']!);
  return Buffer.from(TEXTS[path.slice('/etc/roundtrip/'.length, -'.txt'.length)]!, 'utf8');
}

