/**
 * Reading outputs back the way a node does: the bytes cloud-init writes for each
 * `write_files` entry, and the bytes Ignition writes for each `storage.files` entry.
 */
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { load, YAML11_SCHEMA } from 'js-yaml';

type WriteFile = { path: string; content?: string; encoding?: string };

/** cloud-init `write_files` decoding (cloudinit/config/cc_write_files.py `extract_contents`). */
export function cloudConfigFiles(text: string): Map<string, Buffer> {
  assert.ok(text.startsWith('#cloud-config\n'));
  const doc = load(text, { schema: YAML11_SCHEMA }) as { write_files?: WriteFile[] };
  const out = new Map<string, Buffer>();
  for (const f of doc.write_files ?? []) {
    const raw = f.content ?? '';
    const enc = f.encoding ?? 'text/plain';
    let bytes: Buffer;
    if (['gz', 'gzip'].includes(enc)) bytes = gunzipSync(Buffer.from(raw, 'latin1'));
    else if (['gz+base64', 'gzip+base64', 'gz+b64', 'gzip+b64'].includes(enc)) bytes = gunzipSync(Buffer.from(raw, 'base64'));
    else if (['b64', 'base64'].includes(enc)) bytes = Buffer.from(raw, 'base64');
    else bytes = Buffer.from(raw, 'utf8');
    out.set(f.path, bytes);
  }
  return out;
}

/**
 * Decode an RFC 2397 data URL as Ignition does (vincent-petithory/dataurl): percent-
 * decoding for plain data, base64 when `;base64` is present.
 */
export function decodeDataUrl(url: string): Buffer {
  const m = /^data:([^,]*),(.*)$/s.exec(url);
  assert.ok(m, `not a data URL: ${url.slice(0, 40)}`);
  const meta = m[1]!;
  const data = m[2]!;
  assert.ok(/^[\x21-\x7e]*$/.test(data), 'data URL holds raw spaces or non-ASCII');
  return meta.endsWith(';base64') ? Buffer.from(percentDecode(data).toString('latin1'), 'base64') : percentDecode(data);
}

/** RFC 3986 percent-decoding to bytes (no UTF-8 interpretation). */
function percentDecode(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '%') {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(text.charCodeAt(i));
  }
  return Buffer.from(bytes);
}

type IgnFile = { path: string; contents?: { source?: string; compression?: string }; append?: { source?: string; compression?: string }[] | boolean };

/**
 * The bytes Ignition writes (or appends) for each `storage.files` entry, starting from
 * nothing: 3.x `contents` then each `append[]` resource; 2.x `contents` (whether `append`
 * is true or not).
 */
export function ignitionFiles(config: unknown): Map<string, Buffer> {
  const files = ((config as { storage?: { files?: IgnFile[] } }).storage?.files ?? []);
  const out = new Map<string, Buffer>();
  for (const f of files) {
    const parts = [f.contents, ...(Array.isArray(f.append) ? f.append : [])].filter((r): r is { source?: string; compression?: string } => r?.source !== undefined);
    out.set(
      f.path,
      Buffer.concat(parts.map((r) => (r.compression === 'gzip' ? gunzipSync(decodeDataUrl(r.source!)) : decodeDataUrl(r.source!)))),
    );
  }
  return out;
}
