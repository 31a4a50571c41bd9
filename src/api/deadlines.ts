/**
 * The deadline of request bodies still arriving (hostile-input rule: a body trickled a
 * byte at a time must not hold a connection past `BOOTWRIGHT_REQUEST_TIMEOUT_SECONDS`).
 *
 * One timer sweeps every watched request a few times per timeout, instead of a timer
 * and a `close` listener per request: a request whose body is complete, or whose answer
 * was sent, leaves at the next sweep; one still arriving at its deadline is handed to
 * `expire` (which answers 408). So a deadline fires at most a quarter of the timeout
 * (and at most 250 ms) late, and a watched request is held at most that long after it ends.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

interface Watched {
  request: FastifyRequest;
  reply: FastifyReply;
  /** Deadline, ms on the `performance.now()` clock. */
  at: number;
}

/** Watches request bodies against a deadline; see the module comment. */
export class BodyDeadlines {
  private readonly watched = new Set<Watched>();
  private readonly timer: NodeJS.Timeout;

  /**
   * @param timeoutMs how long a body may take to arrive, from when its headers did.
   * @param expire called once for a request whose body has not arrived by then (and
   *   whose answer has not been sent).
   */
  constructor(
    private readonly timeoutMs: number,
    private readonly expire: (request: FastifyRequest, reply: FastifyReply) => void,
  ) {
    this.timer = setInterval(() => this.sweep(), Math.max(10, Math.min(250, timeoutMs / 4)));
    this.timer.unref();
  }

  /** Watch a request whose body is still arriving. */
  watch(request: FastifyRequest, reply: FastifyReply): void {
    this.watched.add({ request, reply, at: performance.now() + this.timeoutMs });
  }

  private sweep(): void {
    const now = performance.now();
    for (const w of this.watched) {
      const { raw } = w.request;
      if (raw.complete || raw.destroyed || w.reply.sent) this.watched.delete(w);
      else if (now >= w.at) {
        this.watched.delete(w);
        this.expire(w.request, w.reply);
      }
    }
  }

  /** Stop sweeping (the server closes). */
  close(): void {
    clearInterval(this.timer);
    this.watched.clear();
  }
}
