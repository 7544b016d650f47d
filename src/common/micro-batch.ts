/**
 * Collects the calls made during one turn of the event loop and runs them as one batch: with 100 attempts in
 * flight, many finish together, and one statement for all of them costs a single database round trip
 * (PERFORMANCE.md: attempt rows are batched where the outcome allows). `run` answers for each input in
 * order; when it throws, every caller of that batch gets the error.
 */
export class MicroBatch<In, Out> {
  private pending: Array<{ input: In; resolve: (o: Out) => void; reject: (e: unknown) => void }> = [];

  constructor(private readonly run: (inputs: In[]) => Promise<Out[]>, private readonly maxSize = 200) {}

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
    this.run(batch.map((b) => b.input)).then(
      (outs) => batch.forEach((b, i) => b.resolve(outs[i])),
      (e) => batch.forEach((b) => b.reject(e)),
    );
  }
}
