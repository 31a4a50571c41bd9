/**
 * Write-time warnings: what a write stores, because it may work later, but what cannot
 * work as the service stands. They are answered as the Kubernetes API answers its
 * warnings, `Warning: 299 - "text"` headers (RFC 7234 §5.5, which kubectl prints as
 * `Warning: text`), never as a refusal.
 */
import type { FieldProblem } from '../errors.js';
import { ASSETS_PREFIX, resolveBootUrl } from '../boot/ipxe.js';
import { routeUrl } from '../boot/sign.js';
import type { ProfileSpec } from './resources.js';

/**
 * A profile's boot references (`spec.boot.kernel`, `spec.boot.initrd[i]`) that resolve
 * to this service (a relative reference, resolved against its public URL as iPXE will)
 * where nothing is served: under `<base>/assets/` when the service has no assets
 * directory, anywhere else on the service always. A reference holding a boot variable
 * (`${publicUrl}`) is resolved per machine and not judged here; one that does not parse
 * is the write check's to refuse.
 *
 * @param baseUrl the service's base URL as machines reach it.
 * @param assetsDir `BOOTWRIGHT_ASSETS_DIR`, or undefined when unset.
 * @returns one warning per reference, at its field path.
 */
export function bootPathWarnings(spec: ProfileSpec, baseUrl: string, assetsDir: string | undefined): FieldProblem[] {
  if (!spec.boot) return [];
  const service = routeUrl(baseUrl, ASSETS_PREFIX);
  const references: [string, string][] = [['spec.boot.kernel', spec.boot.kernel], ...spec.boot.initrd.map((r, i): [string, string] => [`spec.boot.initrd[${i}]`, r])];
  const warnings: FieldProblem[] = [];
  for (const [path, reference] of references) {
    if (reference.includes('${')) continue;
    let url: URL;
    try {
      url = new URL(resolveBootUrl(reference, baseUrl));
    } catch {
      continue;
    }
    if (url.origin !== service.origin) continue;
    if (!url.pathname.startsWith(service.pathname)) {
      warnings.push({ path, message: `resolves to ${url.href} on this service, which serves boot files only under ${service.href} (BOOTWRIGHT_ASSETS_DIR): iPXE will get 404` });
    } else if (assetsDir === undefined) {
      warnings.push({ path, message: `resolves to ${url.href}, but this service serves no boot files (BOOTWRIGHT_ASSETS_DIR is not set): iPXE will get 404 until it is, or use an absolute URL` });
    }
  }
  return warnings;
}

/**
 * `Warning` header values (`299 - "<field>: <message>"`, the quoted-string escaped as
 * RFC 9110 §5.6.4 says) for warnings, at most `max` (a last one counts the rest).
 */
export function warningHeaders(warnings: readonly FieldProblem[], max = 20): string[] {
  const quote = (text: string) => `299 - "${text.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, (c) => `\\${c}`)}"`;
  const shown = warnings.slice(0, max).map((w) => quote(`${w.path}: ${w.message}`));
  if (warnings.length > max) shown.push(quote(`and ${warnings.length - max} more warnings`));
  return shown;
}
