// The gate of background work (training, fits, explain's search): at most its capacity of tasks at once, handed out
// round robin by organization (the one whose last turn is oldest first, its own tasks oldest first); a task whose
// signal aborts, or whose wait passes its deadline, leaves the line without running.
import { describe, expect, it } from 'vitest';

import { SvcError } from '../../src/errors.js';
import { BackgroundGate, kGateRetryAfterSeconds } from '../../src/pool/background-gate.js';

/** A task that records when it starts and ends, and ends when `finish(name)` is called. */
function tasks() {
  const events: string[] = [];
  const ends = new Map<string, () => void>();
  const task = (name: string) => () =>
    new Promise<string>((resolve) => {
      events.push(`start ${name}`);
      ends.set(name, () => {
        events.push(`end ${name}`);
        resolve(name);
      });
    });
  const finish = async (name: string) => {
    ends.get(name)!();
    // The gate starts the next task once the ended one's promise settled.
    await new Promise((r) => setImmediate(r));
  };
  return { events, task, finish };
}

describe('BackgroundGate', () => {
  it("gives one organization's tasks and another's arriving later alternate turns, one at a time", async () => {
    const gate = new BackgroundGate(() => 1);
    const { events, task, finish } = tasks();
    const a = ['a1', 'a2', 'a3', 'a4'].map((name) => gate.run('a', task(name)));
    await new Promise((r) => setImmediate(r));
    // b arrives while a1 runs and a2-a4 wait: b's tasks go before a's waiting ones, turn by turn.
    const b = ['b1', 'b2'].map((name) => gate.run('b', task(name)));
    expect(gate.stats).toEqual({ running: 1, waiting: 5 });
    for (const name of ['a1', 'b1', 'a2', 'b2', 'a3', 'a4']) await finish(name);
    expect(await Promise.all([...a, ...b])).toEqual(['a1', 'a2', 'a3', 'a4', 'b1', 'b2']);
    expect(events).toEqual([
      'start a1',
      'end a1',
      'start b1',
      'end b1',
      'start a2',
      'end a2',
      'start b2',
      'end b2',
      'start a3',
      'end a3',
      'start a4',
      'end a4',
    ]);
    expect(gate.stats).toEqual({ running: 0, waiting: 0 });
  });

  it('runs as many tasks at once as its capacity says, and a newcomer takes the first free slot', async () => {
    const gate = new BackgroundGate(() => 2);
    const { events, task, finish } = tasks();
    const runs = [gate.run('a', task('a1')), gate.run('a', task('a2')), gate.run('a', task('a3'))];
    await new Promise((r) => setImmediate(r));
    runs.push(gate.run('c', task('c1')));
    expect(events).toEqual(['start a1', 'start a2']);
    await finish('a2');
    await finish('c1');
    await finish('a1');
    await finish('a3');
    await Promise.all(runs);
    expect(events).toEqual(['start a1', 'start a2', 'end a2', 'start c1', 'end c1', 'start a3', 'end a1', 'end a3']);
  });

  it('drops a waiting task whose signal aborts, with the aborted error, and runs the rest', async () => {
    const gate = new BackgroundGate(() => 1);
    const { events, task, finish } = tasks();
    const controller = new AbortController();
    const first = gate.run('a', task('a1'));
    const dropped = gate.run('b', task('b1'), { signal: controller.signal });
    const last = gate.run('b', task('b2'));
    controller.abort();
    await expect(dropped).rejects.toEqual(new SvcError('aborted', 'the operation was aborted'));
    expect(gate.stats).toEqual({ running: 1, waiting: 1 });
    await finish('a1');
    await finish('b2');
    expect([await first, await last]).toEqual(['a1', 'b2']);
    expect(events).toEqual(['start a1', 'end a1', 'start b2', 'end b2']);
    // An aborted signal before the call: refused at once, nothing runs.
    await expect(gate.run('c', task('c1'), { signal: controller.signal })).rejects.toThrow('the operation was aborted');
    expect(events).toHaveLength(4);
  });

  it('refuses a task still waiting when its deadline passes with 503 overloaded, and runs the rest', async () => {
    const gate = new BackgroundGate(() => 1);
    const { events, task, finish } = tasks();
    const first = gate.run('a', task('a1'));
    const late = gate.run('b', task('b1'), { startWithinMs: 20 });
    const patient = gate.run('b', task('b2'));
    const error = await late.then(
      () => null,
      (e: unknown) => e as SvcError,
    );
    expect(error).toBeInstanceOf(SvcError);
    expect([error!.code, error!.status, error!.retryAfterSeconds]).toEqual(['overloaded', 503, kGateRetryAfterSeconds]);
    expect(error!.message).toBe(
      'The service is overloaded: this work waited 20 ms for a worker of the share that training and other background work use; ' +
        `retry in ${kGateRetryAfterSeconds} seconds`,
    );
    expect(gate.stats).toEqual({ running: 1, waiting: 1 });
    await finish('a1');
    await finish('b2');
    expect([await first, await patient]).toEqual(['a1', 'b2']);
    expect(events).toEqual(['start a1', 'end a1', 'start b2', 'end b2']);
  });

  it('starts what fits when its capacity grows', async () => {
    let capacity = 1;
    const gate = new BackgroundGate(() => capacity);
    const { events, task, finish } = tasks();
    const runs = [gate.run('a', task('a1')), gate.run('b', task('b1'))];
    expect(events).toEqual(['start a1']);
    capacity = 2;
    gate.poke();
    expect(events).toEqual(['start a1', 'start b1']);
    await finish('a1');
    await finish('b1');
    expect(await Promise.all(runs)).toEqual(['a1', 'b1']);
  });
});
