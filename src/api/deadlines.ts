/**
 * The deadline of request bodies still arriving (hostile-input rule: a body trickled a
 * byte at a time must not hold a connection past `BOOTWRIGHT_REQUEST_TIMEOUT_SECONDS`).
 *
 * One timer sweeps every watched request a few times per timeout, instead of a timer
 * and a `close` listener per request: one still arriving at its deadline is handed to
 * `expire` (which answers 408), so a deadline fires at most a quarter of the timeout
 * (and at most 250 ms) late. A request leaves when it is answered ({@link
 * BodyDeadlines.release}, from the server's `onResponse` hook), or at the next sweep
 * once its body is complete or its connection gone.
 *
 * Released at once, not at the sweep, because a request held past its answer keeps its
 * whole graph (request, reply, parsed headers, body) alive through the young
 * generation's collections: at 12,000 cache hits a second, a 250 ms sweep held 3,000
 * requests, every scavenge copied them, and the collector took a tenth of the main
 * thread (issue 15, lean hit path).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

interface Watched {
  reply: FastifyReply;
  /** Deadline, ms on the `performance.now()` clock. */
  at: number;
}

/** Watches request bodies against a deadline; see the module comment. */
export class BodyDeadlines {
  private readonly watched = new Map<FastifyRequest, Watched>();
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
    this.watched.set(request, { reply, at: performance.now() + this.timeoutMs });
  }

  /** Stop watching a request (answered); a request not watched is ignored. */
  release(request: FastifyRequest): void {
    this.watched.delete(request);
  }

  /** Requests watched now. */
  get size(): number {
    return this.watched.size;
  }

  private sweep(): void {
    const now = performance.now();
    for (const [request, w] of this.watched) {
      const { raw } = request;
      if (raw.complete || raw.destroyed || w.reply.sent) this.watched.delete(request);
      else if (now >= w.at) {
        this.watched.delete(request);
        this.expire(request, w.reply);
      }
    }
  }

  /** Stop sweeping (the server closes). */
  close(): void {
    clearInterval(this.timer);
    this.watched.clear();
  }
}
