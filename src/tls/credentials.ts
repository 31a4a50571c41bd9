/**
 * The serving certificate and key of the HTTPS listener (issue 16): read from PEM files,
 * checked, and reloaded into the running server on SIGHUP or when a file changes,
 * without dropping a connection (`tls.Server.setSecureContext`: new handshakes use the
 * new pair; established connections, keep-alive ones included, keep theirs).
 *
 * Expiry: a certificate that has expired (or is not yet valid) is refused at start, with
 * an error naming the file and the date, because every client would refuse it anyway and
 * a service that seems up but cannot be reached is worse than one that does not start.
 * On reload it is not loaded (the running pair stays) and the error is logged. One that
 * expires within {@link EXPIRY_WARNING_DAYS} days is loaded with a warning.
 */
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import type { Server as TlsServer } from 'node:tls';

/** The lowest TLS version the listener accepts (issue 16: TLS 1.2+). */
export const MIN_TLS_VERSION = 'TLSv1.2';

/** A certificate expiring within this many days is loaded with a warning. */
export const EXPIRY_WARNING_DAYS = 14;

/** How often the certificate and key files are checked for changes, milliseconds. */
export const WATCH_INTERVAL_MS = 1000;

/** A certificate/key pair that cannot be used, naming the file and the reason. */
export class TlsCredentialsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TlsCredentialsError';
  }
}

/** A checked certificate/key pair. */
export interface TlsCredentials {
  /** PEM: the serving certificate, then any chain. */
  cert: string;
  /** PEM private key. */
  key: string;
  /** When the serving certificate expires. */
  notAfter: Date;
  /** Whether it expires within {@link EXPIRY_WARNING_DAYS} days. */
  expiresSoon: boolean;
  /** SHA-256 fingerprint of the serving certificate (colon-separated hex), for logs. */
  fingerprint: string;
}

function read(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new TlsCredentialsError(`${what} ${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/**
 * Read and check a certificate and key.
 *
 * @param certFile PEM, the serving certificate first (then its chain)
 * @param keyFile PEM private key (PKCS #8, PKCS #1 or SEC 1), unencrypted
 * @param now the current time (tests)
 * @throws TlsCredentialsError naming the file when it cannot be read, is not PEM, the
 *   key is not the certificate's, or the certificate is expired or not yet valid; never
 *   quoting the key
 */
export function readCredentials(certFile: string, keyFile: string, now: Date = new Date()): TlsCredentials {
  const cert = read(certFile, 'certificate');
  const key = read(keyFile, 'key');
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch {
    throw new TlsCredentialsError(`certificate ${certFile}: not a PEM X.509 certificate`);
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new TlsCredentialsError(`key ${keyFile}: not an unencrypted PEM private key`);
  }
  if (!leaf.checkPrivateKey(privateKey)) throw new TlsCredentialsError(`key ${keyFile} is not the key of certificate ${certFile}`);
  const notBefore = new Date(leaf.validFrom);
  const notAfter = new Date(leaf.validTo);
  if (now.getTime() >= notAfter.getTime()) throw new TlsCredentialsError(`certificate ${certFile} expired at ${notAfter.toISOString()}; renew it (clients refuse an expired certificate)`);
  if (now.getTime() < notBefore.getTime()) throw new TlsCredentialsError(`certificate ${certFile} is not valid before ${notBefore.toISOString()}; check the clock`);
  try {
    createSecureContext({ cert, key, minVersion: MIN_TLS_VERSION });
  } catch (e) {
    throw new TlsCredentialsError(`certificate ${certFile} and key ${keyFile} cannot be used together (${(e as Error).message})`);
  }
  return { cert, key, notAfter, expiresSoon: notAfter.getTime() - now.getTime() < EXPIRY_WARNING_DAYS * 86_400_000, fingerprint: leaf.fingerprint256 };
}

/** What {@link watchCredentials} logs with. */
interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** A running reloader. */
export interface CredentialsWatch {
  /** Read the files again and, when they check out, use them for new connections. @returns whether it loaded them */
  reload(reason: string): boolean;
  /** Stop watching (the server keeps the pair it has). */
  stop(): void;
}

/**
 * Reload `server`'s certificate on SIGHUP and whenever either file changes (polled every
 * {@link WATCH_INTERVAL_MS} ms by `fs.watchFile`, which follows the path, so a file
 * replaced by rename, as cert-manager and certbot do, is noticed too). A pair that does
 * not check out ({@link readCredentials}: half-written, mismatched while the other file
 * is still being replaced, expired) is not loaded: the running one stays, and the error
 * is logged.
 *
 * @param current the pair loaded at start (its fingerprint tells a change from a touch)
 */
export function watchCredentials(server: TlsServer, certFile: string, keyFile: string, current: TlsCredentials, log: Log): CredentialsWatch {
  let fingerprint = current.fingerprint;
  let key = current.key;
  const reload = (reason: string): boolean => {
    let next: TlsCredentials;
    try {
      next = readCredentials(certFile, keyFile);
    } catch (e) {
      log.error({ reason, error: (e as Error).message }, 'TLS certificate not reloaded: the running one stays');
      return false;
    }
    if (next.fingerprint === fingerprint && next.key === key) return false;
    server.setSecureContext({ cert: next.cert, key: next.key, minVersion: MIN_TLS_VERSION });
    fingerprint = next.fingerprint;
    key = next.key;
    const fields = { reason, notAfter: next.notAfter.toISOString(), fingerprint: next.fingerprint };
    if (next.expiresSoon) log.warn(fields, 'TLS certificate reloaded; it expires soon');
    else log.info(fields, 'TLS certificate reloaded');
    return true;
  };
  const onChange = () => void reload('file changed');
  const onHup = () => void reload('SIGHUP');
  watchFile(certFile, { interval: WATCH_INTERVAL_MS, persistent: false }, onChange);
  watchFile(keyFile, { interval: WATCH_INTERVAL_MS, persistent: false }, onChange);
  process.on('SIGHUP', onHup);
  return {
    reload,
    stop() {
      unwatchFile(certFile, onChange);
      unwatchFile(keyFile, onChange);
      process.off('SIGHUP', onHup);
    },
  };
}
