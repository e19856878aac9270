/**
 * Group commit: concurrent requests run together, as one batch, in one transaction. A request
 * arriving while every slot is busy joins the next batch, which starts as soon as a batch in flight
 * finishes, so batches grow with load. A lone request goes at once (after the current event-loop
 * turn, so requests parsed in the same turn share a batch), unless the batcher is told to wait for
 * company (`waitMs`). Each caller gets its own result, after the batch that carried it has
 * committed, or its own error.
 */
/** Thrown inside a batch's transaction to roll it back; its requests then run one by one. */
export class BatchAbandoned extends Error {}

export interface BatcherOptions<Input, Output> {
  /** Requests in one batch, at most. */
  maxBatch: number;
  /** Batches running at the same time. */
  maxInFlight: number;
  /**
   * Batches running at the same time while a full batch (`maxBatch` requests) waits for a slot: more
   * than `maxInFlight`, for full batches only. Where a batch's time goes to round trips (a database
   * across a network), full batches would wait for a slot while the database and the cores have
   * work to spare; extra slots for them raise throughput, and a moderate load, whose batches are not
   * full, still shares `maxInFlight` slots and makes batches of several. Default: `maxInFlight`.
   */
  maxInFlightWhenFull?: number;
  /**
   * How long a request may wait for others to share its batch: a batch starts once it is full or its
   * oldest request has waited this long. For work whose callers can wait (background processing),
   * so that a moderate load still makes batches of several instead of one statement set per
   * request. 0 (the default): a batch starts as soon as a slot is free.
   */
  waitMs?: number;
  /** Size of a request (e.g. payload bytes); a batch stops growing once `maxWeight` is reached. */
  weight?: (input: Input) => number;
  maxWeight?: number;
  /**
   * Rounds a batch's size down, to one of the sizes its statement is prepared for, say; the requests
   * left over start the next batch. Returns between 1 and `size`.
   */
  shape?: (size: number) => number;
  /**
   * Requests with the key of one already queued or running are not run again: they get that one's
   * result through `copy`, or its error, when it settles.
   */
  coalesce?: { keyOf: (input: Input) => string; copy: (output: Output) => Output };
}

/** Runs one batch; returns one settled result per input, in input order. */
export type BatchRunner<Input, Output> = (inputs: Input[]) => Promise<Array<PromiseSettledResult<Output>>>;

interface Pending<Input, Output> {
  input: Input;
  /** When it was queued (performance.now()), for `waitMs`. */
  queuedAt: number;
  resolve: (output: Output) => void;
  reject: (error: unknown) => void;
}

export class Batcher<Input, Output> {
  private readonly queue: Array<Pending<Input, Output>> = [];
  private inFlight = 0;
  private scheduled = false;
  /** Set while the queue waits for company (see `waitMs`): starts the batches when the oldest has waited enough. */
  private waiting: NodeJS.Timeout | undefined;
  /** The outputs of the requests queued or running, by coalescing key. */
  private readonly unsettled = new Map<string, Promise<Output>>();

  constructor(
    private readonly runBatch: BatchRunner<Input, Output>,
    private readonly options: BatcherOptions<Input, Output>,
  ) {}

  submit(input: Input): Promise<Output> {
    const { coalesce } = this.options;
    if (!coalesce) return this.enqueue(input);
    const key = coalesce.keyOf(input);
    const first = this.unsettled.get(key);
    if (first) return first.then(coalesce.copy);
    const output = this.enqueue(input);
    this.unsettled.set(key, output);
    const forget = () => this.unsettled.delete(key);
    output.then(forget, forget);
    return output;
  }

  private enqueue(input: Input): Promise<Output> {
    return new Promise<Output>((resolve, reject) => {
      this.queue.push({ input, resolve, reject, queuedAt: performance.now() });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.startBatches();
        });
      }
    });
  }

  private startBatches(): void {
    while (this.queue.length > 0 && this.inFlight < this.slots()) {
      const waitLeft = this.waitLeft();
      if (waitLeft > 0) {
        this.waiting ??= setTimeout(() => {
          this.waiting = undefined;
          this.startBatches();
        }, waitLeft);
        return;
      }
      const batch = this.takeBatch();
      this.inFlight++;
      // run() settles every request itself and never rejects.
      void this.run(batch).finally(() => {
        this.inFlight--;
        this.startBatches();
      });
    }
  }

  /** Whether the queue holds a full batch: it waits for no company, and it may take an extra slot. */
  private fullBatchQueued(): boolean {
    return this.queue.length >= this.options.maxBatch;
  }

  /** Batches that may run now: the extra slots count only while a full batch is queued. */
  private slots(): number {
    const { maxInFlight, maxInFlightWhenFull = maxInFlight } = this.options;
    return this.fullBatchQueued() ? Math.max(maxInFlight, maxInFlightWhenFull) : maxInFlight;
  }

  /** Milliseconds the queue should still wait for company before its next batch starts; 0: start now. */
  private waitLeft(): number {
    const { waitMs = 0 } = this.options;
    if (waitMs <= 0 || this.fullBatchQueued()) return 0;
    return Math.max(0, Math.ceil(this.queue[0]!.queuedAt + waitMs - performance.now()));
  }

  private takeBatch(): Array<Pending<Input, Output>> {
    const { maxBatch, weight, maxWeight = Infinity, shape } = this.options;
    let size = 0;
    let total = 0;
    while (size < this.queue.length && size < maxBatch) {
      total += weight ? weight(this.queue[size]!.input) : 0;
      size++;
      if (total >= maxWeight) break;
    }
    return this.queue.splice(0, shape ? shape(size) : size);
  }

  private async run(batch: Array<Pending<Input, Output>>): Promise<void> {
    try {
      const results = await this.runBatch(batch.map((pending) => pending.input));
      batch.forEach((pending, index) => {
        const result = results[index]!;
        if (result.status === 'fulfilled') pending.resolve(result.value);
        else pending.reject(result.reason);
      });
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    }
  }
}

/**
 * A batch runner for requests that can share a statement only with their own kind (same owner and
 * lease time, say): runs `run` once per group of equal `keyOf`, one group after the other, and
 * settles each request with its group's result or error.
 */
export function byGroup<Input, Output>(keyOf: (input: Input) => string, run: (group: Input[]) => Promise<Output[]>): BatchRunner<Input, Output> {
  return async (inputs) => {
    const results = new Map<Input, PromiseSettledResult<Output>>();
    for (const group of groupBy(inputs, keyOf).values()) {
      try {
        const outputs = await run(group);
        group.forEach((input, i) => results.set(input, { status: 'fulfilled', value: outputs[i]! }));
      } catch (error) {
        for (const input of group) results.set(input, { status: 'rejected', reason: error });
      }
    }
    return inputs.map((input) => results.get(input)!);
  };
}

export function groupBy<T, K>(items: T[], keyOfItem: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOfItem(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
