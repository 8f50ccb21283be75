import { limitRejection } from '../service/limits.js';
import type { SvcError } from '../errors.js';
import type { TokenLedger } from '../store/proxy-ledger.js';
import { type Project, usageMonth } from '../store/types.js';

/** Output tokens reserved for a call that names no `max_tokens` (nor `max_completion_tokens`). */
export const kDefaultOutputReservation = 4096;
/** A stream that outgrows its reservation asks for at least this many more tokens at a time. */
const kGrowStepTokens = 1024;
/** How long a reservation outlives its last growth when its process dies without giving it back, beyond the upstream timeout. */
const kReservationGraceMs = 15 * 60_000;

/**
 * Output tokens a call may generate, as its body says (`max_tokens`, or OpenAI's `max_completion_tokens`), else
 * {@link kDefaultOutputReservation}.
 */
export function outputAllowance(body: Record<string, unknown>): number {
  for (const name of ['max_tokens', 'max_completion_tokens']) {
    const value = body[name];
    if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value;
  }
  return kDefaultOutputReservation;
}

/**
 * The part of a project's monthly budget one call holds while it runs: taken before the call goes upstream
 * (`input estimate + output allowance`, or what is left of the budget if less), grown while it streams, and given
 * back when its log row counts its real tokens. With every call holding its share, calls running at the same time
 * cannot spend the same tokens: 20 parallel calls on a 1,000-token budget are admitted while their holds fit.
 */
export class BudgetHold {
  readonly #ledger: TokenLedger;
  readonly #project: Project & { monthlyTokenBudget: number };
  readonly #ttlMs: number;
  readonly id: number;
  readonly month: string;
  /** The month's usage when the hold was taken. */
  readonly usedBefore: number;
  #granted: number;

  private constructor(
    ledger: TokenLedger,
    project: Project & { monthlyTokenBudget: number },
    ttlMs: number,
    id: number,
    month: string,
    usedBefore: number,
    granted: number,
  ) {
    this.#ledger = ledger;
    this.#project = project;
    this.#ttlMs = ttlMs;
    this.id = id;
    this.month = month;
    this.usedBefore = usedBefore;
    this.#granted = granted;
  }

  /**
   * Reserves `want` tokens of the project's budget (fewer when less is left); null when the project has no budget.
   * Throws `budget_exceeded` (403) when nothing is left, counting the tokens other calls hold as used.
   */
  static async take(ledger: TokenLedger, project: Project, want: number, upstreamTimeoutMs: number): Promise<BudgetHold | null> {
    const budget = project.monthlyTokenBudget;
    if (budget === null) return null;
    const at = Date.now();
    const month = usageMonth(at);
    const ttlMs = upstreamTimeoutMs + kReservationGraceMs;
    const taken = await ledger.reserve({ projectId: project.id, month, budget, want, at, expiresAt: at + ttlMs });
    if (taken.id === null) {
      throw limitRejection({ kind: 'budget', projectId: project.id, month, budget, used: taken.used + taken.held });
    }
    return new BudgetHold(ledger, { ...project, monthlyTokenBudget: budget }, ttlMs, taken.id, month, taken.used, taken.granted);
  }

  /** Tokens the call may use. */
  get granted(): number {
    return this.#granted;
  }

  /** Asks for room for `running` tokens in all; false when the budget has none left to give. */
  async grow(running: number): Promise<boolean> {
    const want = Math.max(running - this.#granted, kGrowStepTokens);
    const at = Date.now();
    const added = await this.#ledger.extend(this.id, { budget: this.#project.monthlyTokenBudget, want, at, expiresAt: at + this.#ttlMs });
    this.#granted += added;
    return this.#granted >= running;
  }

  /** The error a stream ends with when the budget ran out under it, `running` tokens into the call. */
  exhausted(running: number): SvcError {
    const { id, monthlyTokenBudget: budget } = this.#project;
    return limitRejection({ kind: 'budget', projectId: id, month: this.month, budget, used: this.usedBefore + running });
  }

  /** Gives the hold back when the call never reached the log (it is otherwise given back with its row). */
  release(): Promise<void> {
    return this.#ledger.release(this.id);
  }
}
