/** A call waiting in a batch: its input, and how to answer it. */
export interface BatchedCall<In, Out> {
  input: In;
  resolve: (o: Out) => void;
  reject: (e: unknown) => void;
}

/**
 * Answers `calls` with one run over their inputs: `run` answers for each input in order; when it throws, every
 * one of the calls gets the error.
 */
export function answerAll<In, Out>(calls: Array<BatchedCall<In, Out>>, run: (inputs: In[]) => Promise<Out[]>): Promise<void> {
  return run(calls.map((c) => c.input)).then(
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
  private settle: (calls: Array<BatchedCall<In, Out>>) => Promise<void>;

  constructor(run: (inputs: In[]) => Promise<Out[]>, private readonly maxSize = 200) {
    this.settle = (calls) => answerAll(calls, run);
  }

  /**
   * A batch whose `settle` resolves or rejects each call itself (answerAll does it for a part that succeeds
   * or fails as a whole). Calls it leaves unanswered when it throws get its error; it must answer every call.
   */
  static settling<In, Out>(settle: (calls: Array<BatchedCall<In, Out>>) => Promise<void>, maxSize = 200): MicroBatch<In, Out> {
    const b = new MicroBatch<In, Out>(() => Promise.reject(new Error('unused')), maxSize);
    b.settle = settle;
    return b;
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
    try {
      this.settle(batch).catch(unanswered);
    } catch (e) {
      unanswered(e);
    }
  }
}
