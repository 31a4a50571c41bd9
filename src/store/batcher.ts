/**
 * Group concurrent writes into batches, each sent as one statement (a group commit): the
 * PostgreSQL store's served firmware answers (issue 32), whose cost in a boot storm is
 * the round trips and the statements, not the rows.
 */

/** Limits of a {@link KeyedBatcher}. */
export interface BatcherOptions {
  /** Most items in one batch. */
  size: number;
  /** Most batches running at once (each holds a database connection while it runs). */
  inFlight: number;
}

interface Waiting<T, R> {
  item: T;
  /** Undefined: the batcher has no keys. */
  key: string | undefined;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}

/**
 * Gathers the items pushed while the event loop works on other callbacks and runs them as
 * batches: a batch starts on the next turn of the loop (`setImmediate`, after the I/O
 * callbacks that pushed them) when fewer than `inFlight` run, else once one ends, so
 * under load items gather while the batches before them run, and an item pushed alone is
 * delayed by one turn. A batch holds at most one item per key, and a key with an item in
 * a running batch waits for that batch to end: the items of one key run one after another,
 * in the order pushed, each seeing the one before it written. Without `keyOf`, every item
 * is a key of its own.
 *
 * `run` answers every item of a batch, in order, or throws (then every item of the batch
 * is rejected with its error).
 */
export class KeyedBatcher<T, R> {
  private readonly waiting: Waiting<T, R>[] = [];
  private readonly busyKeys = new Set<string>();
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly run: (items: T[]) => Promise<R[]>,
    private readonly keyOf: ((item: T) => string) | undefined,
    private readonly options: BatcherOptions,
  ) {}

  /** Queue `item`; resolves with its answer once its batch ran, rejects with the batch's error. */
  push(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, key: this.keyOf?.(item), resolve, reject });
      this.schedule();
    });
  }

  /** Items queued and not yet in a running batch. */
  get queued(): number {
    return this.waiting.length;
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.options.inFlight || this.waiting.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.running < this.options.inFlight && this.start()) {
        // each start takes a batch
      }
    });
  }

  /** Start one batch of the waiting items whose keys are free; false when none is. */
  private start(): boolean {
    const batch: Waiting<T, R>[] = [];
    const keys = new Set<string>();
    let kept = 0;
    for (const w of this.waiting) {
      if (batch.length < this.options.size && (w.key === undefined || (!this.busyKeys.has(w.key) && !keys.has(w.key)))) {
        batch.push(w);
        if (w.key !== undefined) keys.add(w.key);
      } else {
        this.waiting[kept++] = w;
      }
    }
    this.waiting.length = kept;
    if (batch.length === 0) return false;
    this.running++;
    for (const k of keys) this.busyKeys.add(k);
    const settle = (answer: (w: Waiting<T, R>, i: number) => void) => {
      this.running--;
      for (const k of keys) this.busyKeys.delete(k);
      batch.forEach(answer);
      this.schedule();
    };
    this.run(batch.map((w) => w.item)).then(
      (results) => settle((w, i) => w.resolve(results[i]!)),
      (e: unknown) => settle((w) => w.reject(e)),
    );
    return true;
  }
}
