/** A call waiting in a batch: its input, and how to answer it. */
export interface BatchedCall<In, Out> {
  input: In;
  resolve: (o: Out) => void;
  reject: (e: unknown) => void;
}

/** Answers every call of a batch, each resolved or rejected (see MicroBatch.settling). */
export type Settle<In, Out> = (calls: Array<BatchedCall<In, Out>>) => Promise<void>;

/**
 * Answers `calls` with one run over their inputs: `run` answers for each input in order; when it throws, every
 * one of the calls gets the error.
 */
export function answerAll<In, Out>(calls: Array<BatchedCall<In, Out>>, run: (inputs: In[]) => Promise<Out[]>): Promise<void> {
  // Through a promise: a `run` that throws before returning one rejects the calls too.
  return Promise.resolve(calls.map((c) => c.input)).then(run).then(
    (outs) => calls.forEach((c, i) => c.resolve(outs[i])),
    (e: unknown) => calls.forEach((c) => c.reject(e)),
  );
}

/**
 * Collects the calls made during one turn of the event loop and runs them as one batch: with 100 attempts in
 * flight, many finish together, and one statement for all of them costs a single database round trip
 * (PERFORMANCE.md: attempt rows are batched where the outcome allows). `run` answers for each input in
 * order; when it throws, every caller of that batch gets the error. `MicroBatch.settling` makes one whose
 * batch answers each call itself, for batches whose parts may fail apart.
 */
export class MicroBatch<In, Out> {
  private pending: Array<BatchedCall<In, Out>> = [];
  private readonly settle: Settle<In, Out>;

  constructor(run: ((inputs: In[]) => Promise<Out[]>) | { settle: Settle<In, Out> }, private readonly maxSize = 200) {
    this.settle = typeof run === 'function' ? (calls) => answerAll(calls, run) : run.settle;
  }

  /**
   * A batch whose `settle` resolves or rejects each call itself (answerAll does it for a part that succeeds
   * or fails as a whole). Calls it leaves unanswered get its error when it throws, and an error saying so
   * when it returns: a caller never waits forever.
   */
  static settling<In, Out>(settle: Settle<In, Out>, maxSize = 200): MicroBatch<In, Out> {
    return new MicroBatch<In, Out>({ settle }, maxSize);
  }

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (this.pending.length === 1) setImmediate(() => this.flush());
      else if (this.pending.length >= this.maxSize) this.flush();
    });
  }

  private flush(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    // Rejecting a call already answered does nothing: only those the batch left unanswered get the error.
    const unanswered = (e: unknown) => batch.forEach((c) => c.reject(e));
    Promise.resolve(batch)
      .then(this.settle)
      .then(() => unanswered(new Error('MicroBatch: the batch left a call unanswered')), unanswered);
  }
}
