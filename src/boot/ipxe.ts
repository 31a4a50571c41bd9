/**
 * The iPXE scripts bootwright serves (issue 4, "Firmware-facing routes"): the static
 * chain script of `GET /boot.ipxe`, a registered machine's boot script, and the script
 * an unknown machine gets. Pure text builders: no HTTP, no store.
 *
 * What iPXE does with a script line, from its source (ipxe/ipxe): `src/image/script.c`
 * reads a line, drops a trailing CR, joins a line ending in `\` with the next one, and
 * treats `:name` at the start as a label; `src/core/exec.c` (`system`) splits the line at
 * white space with no quoting of any kind, stops at a token starting with `#` (a comment),
 * treats the tokens `||`, `&&` and `;` as command separators, and expands settings in
 * every token with `expand_settings` (`src/core/settings.c`): the innermost `${name}`
 * is replaced by the setting's value (nothing when unset) and the scan starts again from
 * the beginning of the token until no `${...}` is left. There is no escape character: a
 * `$` not followed by `{`, or a `${` with no `}` after it in the same token, stays
 * literal, but a `${...}` can never reach a command, whatever one writes (even a value
 * that expands to `${x}` is expanded again). A failing command ends the script unless
 * followed by `|| ...`.
 *
 * So a value bootwright puts in a script literally (URLs, kernel arguments) must be one
 * token that none of those rules touch: no white space or control characters, not
 * starting with `#`, not `||`/`&&`/`;`, not ending in `\`, and no `${` with a `}` after
 * it. Such a value is passed through unchanged (a lone `$` needs no escaping); any other
 * is refused ({@link literalTokenProblem}), because it cannot be written at all.
 */
import { RequestError, type FieldProblem } from '../errors.js';
import type { OutputFormat } from '../request/schema.js';
import type { BootSpec } from '../store/resources.js';
import type { MachineIdentity } from './identity.js';
import { routeUrl } from './sign.js';

/** Linux's `COMMAND_LINE_SIZE` on x86 and arm64, bytes including the final NUL: a longer command line is cut off. */
export const KERNEL_CMDLINE_MAX = 2048;

/** Default pause before an iPXE script retries, seconds. */
export const DEFAULT_RETRY_SECONDS = 10;

/** URL schemes iPXE fetches that bootwright accepts for kernels and initrds. */
const BOOT_SCHEMES = new Set(['http:', 'https:', 'tftp:']);

/** The path under the service's base URL that `BOOTWRIGHT_ASSETS_DIR` is served at (src/api/routes/assets.ts). */
export const ASSETS_PREFIX = '/assets/';

/**
 * Why `token` cannot be written literally as one argument of an iPXE script line, or
 * undefined when it can (see the module comment for iPXE's rules).
 *
 * @param token the exact text the command must receive
 * @returns a sentence naming the problem, or undefined
 */
export function literalTokenProblem(token: string): string | undefined {
  if (token === '') return 'is empty';
  if (/[\s\x00-\x1f\x7f]/.test(token)) return 'contains white space or a control character; iPXE splits arguments at white space and has no quoting';
  if (token.startsWith('#')) return 'starts with "#", which iPXE reads as the start of a comment';
  if (token === '||' || token === '&&' || token === ';') return `is "${token}", which iPXE reads as a command separator`;
  if (token.endsWith('\\')) return 'ends with "\\", which iPXE reads as a line continuation';
  if (/\$\{[^}]*\}/.test(token)) return 'contains "${...}", which iPXE replaces with a setting\'s value (iPXE has no escape for it)';
  return undefined;
}

/**
 * Why a kernel argument cannot be passed through an iPXE script, or undefined when it
 * can: {@link literalTokenProblem}, with the white-space case worded for kernel
 * arguments (Linux itself allows `key="a b"`, but iPXE would collapse the spaces).
 * Use it to validate `boot.args` when a profile is written.
 */
export function kernelArgProblem(arg: string): string | undefined {
  if (/\s/.test(arg)) return 'contains white space: give each kernel argument as its own list item, without spaces';
  return literalTokenProblem(arg);
}

/** The key of a kernel argument: the text before the first `=`, or all of it. */
export function kernelArgKey(arg: string): string {
  const eq = arg.indexOf('=');
  return eq < 0 ? arg : arg.slice(0, eq);
}

/**
 * Resolve a kernel or initrd reference from a profile against the service's base URL
 * (RFC 3986 §5.2): an absolute http, https or tftp URL is kept; a relative reference
 * resolves against the base URL taken as a directory (`http://h/bw` → `http://h/bw/`), so
 * `assets/vmlinuz` → `http://h/bw/assets/vmlinuz` and `/assets/vmlinuz` →
 * `http://h/assets/vmlinuz`.
 *
 * @returns the absolute URL, serialised by the WHATWG URL parser (spaces and other
 *   characters outside RFC 3986 percent-encoded)
 * @throws TypeError when the reference does not parse, uses another scheme, or the
 *   base URL is not an absolute http(s) URL
 */
export function resolveBootUrl(reference: string, baseUrl: string): string {
  const base = routeUrl(baseUrl, '/');
  let url: URL;
  try {
    url = new URL(reference, base);
  } catch {
    throw new TypeError('is not a URL or a path');
  }
  if (!BOOT_SCHEMES.has(url.protocol)) throw new TypeError(`uses scheme ${url.protocol}; bootwright accepts http, https and tftp`);
  return url.href;
}

function literal(value: string, path: string, problems: FieldProblem[]): string {
  const problem = literalTokenProblem(value);
  if (problem) problems.push({ path, message: `the resolved URL ${problem}` });
  return value;
}

function script(lines: readonly string[]): string {
  return `#!ipxe\n${lines.join('\n')}\n`;
}

function retryCount(seconds: number): number {
  if (!Number.isSafeInteger(seconds) || seconds < 1) throw new TypeError('retrySeconds must be a positive integer');
  return seconds;
}

/**
 * The static script of `GET /boot.ipxe`: make sure an interface is configured, then
 * chain-load `<baseUrl>/ipxe` with the machine's identity in the query, retrying both
 * forever with a pause (iPXE ends a script at the first failing command, so each is
 * guarded by `|| goto`). `chain --replace --autofree` replaces this script with the
 * answer, so the retry loop never stacks scripts.
 *
 * Which interface: iPXE's `netX` is the most recently opened network device
 * (`find_netdev("netX")` → `last_opened_netdev()`). iPXE reaches this script over the
 * interface it booted from, which `autoboot` (or the PXE stack that chainloaded iPXE) has
 * opened and configured, so `${netX}` is that interface and `${netX/ip}` is set. A bare
 * `dhcp` (`ifconf` without an interface) would open and configure every interface in
 * turn from `net0`, stopping at the first lease, so on a machine that boots from its
 * second NIC it would move `netX` to `net0` and report the wrong MAC. Hence
 * `isset ${netX/ip} || dhcp`: a working interface is left as it is, and DHCP runs only
 * when nothing is configured (iPXE started without a network boot, e.g. from a USB key).
 * iPXE runs the commands of a line left to right and skips a command after `||` when the
 * one before succeeded, keeping that status, so `goto` runs only when `dhcp` ran and failed.
 *
 * The query (expanded by iPXE, see identity.ts `machineIdentity`):
 * `mac=${netX/mac:hexhyp}` (the interface iPXE booted from, see above),
 * `uuid=${uuid}` (SMBIOS UUID, canonical form), `serial_hex=${serial:hex}` and
 * `hostname_hex=${hostname:hex}` (bytes as `xx:xx:...`, safe for any content, unlike
 * `:uristring` in iPXE builds that leave `&` unescaped), `buildarch=${buildarch:uristring}`,
 * `platform=${platform:uristring}`. Every expansion yields only URI-safe characters.
 *
 * HTTPS (issue 16): with `plainBaseUrl` (the script was fetched over the plain-HTTP
 * listener of an HTTPS service), the chain tries `<baseUrl>/ipxe` first and, when that
 * fails, `<plainBaseUrl>/ipxe`. That is iPXE's only reliable feature test: a script
 * cannot ask whether the build has `DOWNLOAD_PROTO_HTTPS` (ipxe/ipxe issue 1532; upstream
 * enables it by default for EFI builds only, `src/config/general.h`, so `${platform}`
 * is a guess at best), nor whether it trusts the CA (only the iPXE root CA, unless built
 * with `TRUST=`). `chain` of an https URL fails at once in a build without HTTPS
 * ("Operation not supported") and at the handshake in one that does not trust the
 * certificate; both fall through to plain HTTP. The fallback is no weaker than plain
 * HTTP alone: this script itself came over plain HTTP.
 *
 * @param baseUrl the service's external base URL (`http://10.0.0.1:8080`, a path prefix allowed)
 * @param retrySeconds pause between attempts (default {@link DEFAULT_RETRY_SECONDS})
 * @param plainBaseUrl the plain-HTTP listener's base URL, to fall back to (see above)
 * @returns the script text, starting `#!ipxe\n`, ending with a newline
 * @throws TypeError for a base URL that is not absolute http(s) or cannot be written
 *   into a script, or a retry that is not a positive integer
 */
export function bootScript(baseUrl: string, retrySeconds: number = DEFAULT_RETRY_SECONDS, plainBaseUrl?: string): string {
  const wait = retryCount(retrySeconds);
  const ipxe = routeUrl(baseUrl, '/ipxe').href;
  const problem = literalTokenProblem(ipxe);
  if (problem) throw new TypeError(`base URL ${problem}`);
  const plain = plainBaseUrl === undefined ? undefined : routeUrl(plainBaseUrl, '/ipxe').href;
  const plainProblem = plain === undefined ? undefined : literalTokenProblem(plain);
  if (plainProblem) throw new TypeError(`plain base URL ${plainProblem}`);
  const query = [
    'mac=${netX/mac:hexhyp}',
    'uuid=${uuid}',
    'serial_hex=${serial:hex}',
    'hostname_hex=${hostname:hex}',
    'buildarch=${buildarch:uristring}',
    'platform=${platform:uristring}',
  ].join('&');
  return script([
    '# bootwright: fetch this machine\'s boot script, retrying until the service answers',
    ':bootwright_retry',
    'isset ${netX/ip} || dhcp || goto bootwright_wait',
    `chain --replace --autofree ${ipxe}?${query}${plain === undefined ? '' : ` || chain --replace --autofree ${plain}?${query}`} || goto bootwright_wait`,
    ':bootwright_wait',
    `echo bootwright: no boot script from ${ipxe} yet, retrying in ${wait} seconds`,
    `sleep ${wait}`,
    'goto bootwright_retry',
  ]);
}

/** Which bootstrap data a profile's machines boot with: profile `output.format`, default cloud-config (DESIGN §4 negotiation). */
export function bootFormat(outputFormat: OutputFormat | undefined): OutputFormat {
  return outputFormat === 'ignition' ? 'ignition' : 'cloud-config';
}

/** Options for {@link provisioningArgs}. */
export interface ProvisioningArgsOptions {
  /**
   * cloud-init datasource name in `ds=`: `nocloud-net` (default) or `nocloud`. From
   * cloud-init 24.1 `ds=nocloud;s=http://...` picks the network stage from the URL
   * scheme and `nocloud-net` is deprecated (still honoured, with a notice); before that
   * (22.4 in Debian 12) only `nocloud-net` fetches an http seed in the right stage: with
   * `nocloud` the datasource is found but left in local mode and user data is never
   * applied. So the default is the spelling every cloud-init in use boots with.
   */
  nocloudDatasource?: 'nocloud' | 'nocloud-net';
}

/**
 * The kernel arguments that point a booting OS at its bootstrap data.
 *
 * - `ignition`: `ignition.firstboot ignition.platform.id=metal ignition.config.url=<url>`
 *   (Ignition on bare metal reads its config URL from the kernel command line on first
 *   boot; Flatcar also wants `flatcar.first_boot=1`, which a profile adds to `boot.args`).
 * - `cloud-config`: `ds=nocloud;s=<url>` (cloud-init `DataSourceNoCloud`: `parse_cmdline_data`
 *   splits the token at `;` and the first `=`), where `<url>` is the NoCloud seed prefix
 *   ending in `/` to which cloud-init appends `meta-data`, `user-data`, ...
 *
 * @param format from {@link bootFormat}
 * @param url the signed URL (sign.ts `signedUrl`: `/ignition?...` or `/nocloud/ID/EXP/SIG/`)
 * @returns the arguments, in that order
 * @throws TypeError when the URL cannot be written into a kernel command line, or (for
 *   NoCloud) does not end in `/` or contains `;`
 */
export function provisioningArgs(format: OutputFormat, url: string, options: ProvisioningArgsOptions = {}): string[] {
  const args =
    format === 'ignition'
      ? ['ignition.firstboot', 'ignition.platform.id=metal', `ignition.config.url=${url}`]
      : [`ds=${options.nocloudDatasource ?? 'nocloud-net'};s=${url}`];
  if (format !== 'ignition' && (!url.endsWith('/') || url.includes(';'))) throw new TypeError('a NoCloud seed URL must end in "/" and contain no ";"');
  for (const arg of args) {
    const problem = kernelArgProblem(arg);
    if (problem) throw new TypeError(`bootstrap URL ${problem}`);
  }
  return args;
}

/** A bootwright variable's name in `${name}`. */
export const BOOT_VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** The variables bootwright itself defines in boot references and arguments. */
export const BUILTIN_BOOT_VARIABLES = ['publicUrl', 'machine'] as const;

/** Values for `${name}` in a profile's `boot` and a machine's `kernelArgs` (see {@link machineScript}). */
export interface BootVariables {
  /** The service's public base URL, without a trailing `/`. */
  publicUrl: string;
  /** The machine's name. */
  machine: string;
  /**
   * The machine's own variables (`spec.variables`), or `'any'` to accept every
   * well-formed name with a placeholder value (a profile checked on its own, before any
   * machine gives values).
   */
  own: Readonly<Record<string, string>> | 'any';
}

/**
 * Replace each `${name}` in `text` whose name is a bootwright variable (one pass: a value
 * is not expanded again); a `${...}` that is not one is left for {@link literalTokenProblem}
 * to refuse, with a problem here naming it.
 */
function substitute(text: string, vars: BootVariables | undefined, path: string, problems: FieldProblem[]): string {
  if (vars === undefined || !text.includes('${')) return text;
  const unknown: string[] = [];
  const out = text.replace(/\$\{([^}]*)\}/g, (whole, name: string) => {
    if (name === 'publicUrl') return vars.publicUrl;
    if (name === 'machine') return vars.machine;
    if (BOOT_VARIABLE_NAME.test(name)) {
      if (vars.own === 'any') return 'x';
      if (Object.hasOwn(vars.own, name)) return vars.own[name]!;
    }
    unknown.push(name);
    return whole;
  });
  if (unknown.length > 0) {
    const named = BOOT_VARIABLE_NAME.test(unknown[0]!) ? `\${${unknown[0]!}}` : 'a "${...}"';
    problems.push({ path, message: `uses ${named}, which is not a bootwright variable (publicUrl, machine, or one of the machine's spec.variables); iPXE would replace it with its own setting` });
    return '';
  }
  return out;
}

/**
 * A registered machine's boot script: fetch the kernel with its arguments and the
 * initrds, boot; on any failure, say so, wait and start over from `/boot.ipxe`.
 *
 * ```
 * #!ipxe
 * imgfree
 * kernel <kernel URL> initrd=initrd0 <boot.args...> <extraArgs...> || goto bootwright_failed
 * initrd --name initrd0 <initrd URL> || goto bootwright_failed
 * boot || goto bootwright_failed
 * ...
 * ```
 *
 * - Kernel and initrd references resolve against `baseUrl` ({@link resolveBootUrl}).
 * - Each initrd is fetched under the name `initrdN` and named on the command line as
 *   `initrd=initrdN`, which is how a kernel started through EFI finds it (as in Fedora
 *   CoreOS's iPXE instructions); on BIOS the argument is harmless. So `boot.args` must not
 *   name initrds itself.
 * - Arguments are written literally, in order: `boot.args`, the machine's own
 *   `kernelArgs`, then `extraArgs` (from {@link provisioningArgs}, carrying the signed
 *   URL, and src/boot/network.ts). With `vars`, `${publicUrl}`, `${machine}` and the
 *   machine's variables in `boot.kernel`, `boot.initrd[]`, `boot.args[]` and the
 *   machine's arguments are replaced first ({@link BootVariables}). A lone `$` passes unchanged;
 *   an argument iPXE would alter ({@link kernelArgProblem}) is refused, as is a key given
 *   in both lists (the kernel would see it twice) and a command line longer than
 *   {@link KERNEL_CMDLINE_MAX} − 1 bytes (Linux would cut off the end, signed URL
 *   included).
 * - `imgfree` first, so a retry does not keep earlier downloads in memory (iPXE's
 *   `imgfree` notes).
 * - The failure path prints nothing secret (no URLs): the script itself carries the
 *   signed URL, the screen does not.
 *
 * @param boot the profile's `boot` section (`kernel`, `initrd[]`, `args[]`)
 * @param extraArgs bootwright's own arguments, appended after `boot.args`
 * @param baseUrl the service's external base URL
 * @param retrySeconds pause before starting over after a failure (default {@link DEFAULT_RETRY_SECONDS})
 * @param machine the machine's `kernelArgs` and the variables' values (absent: none, and no `${...}` is replaced)
 * @returns the script text
 * @throws RequestError (422) listing every problem, at paths `boot.kernel`,
 *   `boot.initrd[i]`, `boot.args[i]`, `spec.kernelArgs[i]`, `extraArgs[i]`, `boot` (command-line length);
 *   messages name the problem, never the value (arguments and URLs may carry secrets)
 * @throws TypeError for a bad base URL or retry
 */
export function machineScript(
  boot: BootSpec,
  extraArgs: readonly string[],
  baseUrl: string,
  retrySeconds: number = DEFAULT_RETRY_SECONDS,
  machine: { kernelArgs?: readonly string[]; vars?: BootVariables } = {},
): string {
  const wait = retryCount(retrySeconds);
  const restart = routeUrl(baseUrl, '/boot.ipxe').href;
  const problems: FieldProblem[] = [];
  const vars = machine.vars;
  const resolve = (ref: string, path: string): string => {
    const text = substitute(ref, vars, path, problems);
    if (text === '') return '';
    try {
      return literal(resolveBootUrl(text, baseUrl), path, problems);
    } catch (e) {
      problems.push({ path, message: (e as Error).message });
      return '';
    }
  };

  const kernel = resolve(boot.kernel, 'boot.kernel');
  const initrds = boot.initrd.map((ref, i) => ({ name: `initrd${i}`, url: resolve(ref, `boot.initrd[${i}]`) }));
  const extraKeys = new Set(extraArgs.map(kernelArgKey));
  const given = [
    ...boot.args.map((arg, i) => ({ arg, path: `boot.args[${i}]`, owner: 'the profile' })),
    ...(machine.kernelArgs ?? []).map((arg, i) => ({ arg, path: `spec.kernelArgs[${i}]`, owner: 'the machine' })),
  ];
  const ownArgs: string[] = [];
  for (const { arg: raw, path, owner } of given) {
    const before = problems.length;
    const arg = substitute(raw, vars, path, problems);
    if (problems.length > before) continue;
    const problem = kernelArgProblem(arg);
    const key = kernelArgKey(arg);
    if (problem) problems.push({ path, message: problem });
    else if (key === 'initrd') problems.push({ path, message: 'initrd= is set by bootwright, which names each initrd it fetches (initrd0, initrd1, ...)' });
    else if (extraKeys.has(key)) problems.push({ path, message: `${key} is set by bootwright for this machine; remove it from ${owner}` });
    ownArgs.push(arg);
  }
  extraArgs.forEach((arg, i) => {
    const problem = kernelArgProblem(arg);
    if (problem) problems.push({ path: `extraArgs[${i}]`, message: problem });
  });
  const args = [...initrds.map((i) => `initrd=${i.name}`), ...ownArgs, ...extraArgs];
  const cmdlineBytes = Buffer.byteLength(args.join(' '), 'utf8');
  if (cmdlineBytes > KERNEL_CMDLINE_MAX - 1) {
    problems.push({ path: 'boot', message: `the kernel command line would be ${cmdlineBytes} bytes; Linux keeps at most ${KERNEL_CMDLINE_MAX - 1}` });
  }
  if (problems.length) throw new RequestError(problems);

  return script([
    '# bootwright: boot this machine',
    'imgfree',
    `kernel ${[kernel, ...args].join(' ')} || goto bootwright_failed`,
    ...initrds.map((i) => `initrd --name ${i.name} ${i.url} || goto bootwright_failed`),
    'boot || goto bootwright_failed',
    ':bootwright_failed',
    `echo bootwright: boot failed, starting over in ${wait} seconds`,
    `sleep ${wait}`,
    `chain --replace --autofree ${restart} || goto bootwright_failed`,
  ]);
}

/** At most this many characters of a reported value are printed. */
const ECHO_MAX = 64;

/**
 * A reported value made safe to print with iPXE's `echo`: characters other than letters,
 * digits and `.:/@+=,-_` become `_` (this removes white space, `#`, `$`, `|`, `&`, `;`
 * and `\`, so the value can neither end the command nor start another), and it is cut to
 * 64 characters.
 */
export function echoSafe(value: string): string {
  const safe = value.replace(/[^A-Za-z0-9.:/@+=,_-]/g, '_');
  return safe.length > ECHO_MAX ? `${safe.slice(0, ECHO_MAX)}...` : safe;
}

/**
 * The script for a machine that matches no registered machine: it prints why, with the
 * identity it reported (MAC, UUID, serial, host name: hardware facts, nothing secret;
 * each through {@link echoSafe}) so an operator at the console can enrol it, then waits
 * and starts over from `/boot.ipxe`, forever.
 *
 * @param identity what the machine reported (identity.ts `machineIdentity`)
 * @param retrySeconds pause before retrying, seconds (a positive integer)
 * @param baseUrl the service's external base URL
 * @returns the script text
 * @throws TypeError for a bad base URL or retry
 */
export function unknownMachineScript(identity: MachineIdentity, retrySeconds: number, baseUrl: string): string {
  const wait = retryCount(retrySeconds);
  const restart = routeUrl(baseUrl, '/boot.ipxe').href;
  const problem = literalTokenProblem(restart);
  if (problem) throw new TypeError(`base URL ${problem}`);
  const facts = (['mac', 'uuid', 'serial', 'hostname'] as const).flatMap((k) => (identity[k] === undefined ? [] : [`${k}=${echoSafe(identity[k])}`]));
  const reported =
    facts.length > 0
      ? `echo bootwright: this machine reported ${facts.join(' ')}`
      : 'echo bootwright: this machine reported no usable MAC, UUID, serial or host name';
  const lines = [
    '# bootwright: this machine is not registered',
    'echo bootwright: no registered machine matches this one',
    reported,
  ];
  if (identity.ignored.length > 0) lines.push(`echo bootwright: unusable values for ${identity.ignored.map(echoSafe).join(',')}`);
  lines.push(
    'echo bootwright: enrol it from GET /v1/discovered, then it boots on the next retry',
    ':bootwright_retry',
    `echo bootwright: retrying in ${wait} seconds`,
    `sleep ${wait}`,
    `chain --replace --autofree ${restart} || goto bootwright_retry`,
  );
  return script(lines);
}
