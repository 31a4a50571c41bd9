/**
 * The per-request logger, made only when a request logs (issue 15, lean hit path).
 * fastify gives every request a child of the service's pino logger carrying its request
 * id; pino builds a child's bindings eagerly (serialized once per child), which a cache
 * hit logging nothing pays for nothing. {@link lazyChildLogger} answers fastify's
 * `childLoggerFactory` with a stand-in that makes the real child (the same
 * `logger.child(bindings, options)` fastify makes) on the first message at an enabled
 * level, so what is logged is byte for byte what fastify's own child logs.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'fastify/types/logger.js';
import type { Logger as PinoLogger } from 'pino';

type Logger = PinoLogger<string>;

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/** The stand-in; see the module comment. */
class LazyChild {
  private real: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** The real child logger, made once. */
  private make(): Logger {
    this.real ??= this.parent.child(this.bindings, this.options);
    return this.real;
  }

  private log(level: Level, args: unknown[]): void {
    // A request-level override (`options.level`) decides for itself: make the child.
    if (this.real === undefined && this.options.level === undefined && !this.parent.isLevelEnabled(level)) return;
    const logger = this.make();
    const method: (...a: unknown[]) => void = logger[level];
    method.apply(logger, args);
  }

  get level(): string {
    return this.real?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.make().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return this.real ? this.real.isLevelEnabled(level) : this.options.level === undefined ? this.parent.isLevelEnabled(level) : this.make().isLevelEnabled(level);
  }

  fatal(...args: unknown[]): void {
    this.log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.log('error', args);
  }
  warn(...args: unknown[]): void {
    this.log('warn', args);
  }
  info(...args: unknown[]): void {
    this.log('info', args);
  }
  debug(...args: unknown[]): void {
    this.log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.log('trace', args);
  }
  silent(): void {
    // pino's silent level logs nothing
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.make().child(bindings, options);
  }
}

/**
 * fastify's `childLoggerFactory`: a request logger that makes its pino child on first use.
 *
 * @returns a logger fastify accepts (fatal…trace, child, level, isLevelEnabled).
 */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  // fastify's logger is pino (server.ts passes pino options).
  return new LazyChild(logger as unknown as Logger, bindings, options);
}
