/**
 * The proxy's ledger in the store: token reservations, and the body bytes each project's request log holds.
 *
 * Reservations are how a project's monthly proxy budget holds when calls run at the same time. A call takes a
 * reservation before it goes upstream (part of the budget no other call may take), may grow it while it streams,
 * and gives it back in the transaction that logs the call and adds its real tokens to the month's usage
 * (`Store.insertRequestLog` with `reservationId`). A reservation whose process died lapses at `expiresAt`.
 */

/** What a reservation asks for. */
export interface TokenReservationRequest {
  projectId: string;
  /** `YYYY-MM` (UTC), as {@link usageMonth} gives it. */
  month: string;
  /** The project's monthly budget. */
  budget: number;
  /** Tokens wanted; fewer are granted when less of the budget is left. */
  want: number;
  /** Now, Unix ms: reservations that lapsed before it do not count. */
  at: number;
  /** When the reservation lapses unless extended. */
  expiresAt: number;
}

/** What {@link TokenLedger.reserve} gave. */
export interface TokenReservation {
  /** Null when nothing was left to grant. */
  id: number | null;
  /** Tokens granted: at most `want`, at most the budget minus `used` and `held`; 0 with a null id. */
  granted: number;
  /** The month's usage before this reservation. */
  used: number;
  /** Tokens other live reservations of the project's month held before this one. */
  held: number;
}

/** One atomic step per call, on every store: two replicas reserving at once never grant the same tokens twice. */
export interface TokenLedger {
  /** Grants `min(want, budget - used - held)` tokens when that is positive, else nothing. */
  reserve(request: TokenReservationRequest): Promise<TokenReservation>;
  /** Grows a live reservation by up to `want` tokens under the same rule and moves its lapse; returns the tokens added. */
  extend(id: number, request: Omit<TokenReservationRequest, 'projectId' | 'month'>): Promise<number>;
  /** Gives a reservation back without logging a call (the call never went upstream). */
  release(id: number): Promise<void>;
}

/** The grant rule, stated once for both stores. */
export function grantable(want: number, budget: number, used: number, held: number): number {
  return Math.max(0, Math.min(want, budget - used - held));
}

/** How a request-log row is stored: options of `Store.insertRequestLog`. */
export interface RequestLogWrite {
  /** The call's reservation, given back in the transaction that counts the call's tokens. */
  reservationId?: number | null;
  /**
   * Body bytes (request + response, UTF-8) the project's log may hold in all; a row that would take it past this
   * keeps its metadata and tokens, and its bodies become {@link kBodiesNotKept}. Retention pruning frees room.
   */
  maxProjectBodyBytes?: number;
}

/** What a row's bodies read when its project's log already holds its cap of body bytes. */
export const kBodiesNotKept = "[not kept: the project's request log holds its limit of body bytes]";

/**
 * The bodies a row keeps under its project's cap and the bytes they count: both as given when they fit in the room
 * left (`cap - stored`), else the marker, counting 0.
 */
export function bodiesUnderCap(
  requestBody: string,
  responseBody: string,
  stored: number,
  cap: number | undefined,
): { requestBody: string; responseBody: string; bytes: number } {
  const bytes = Buffer.byteLength(requestBody) + Buffer.byteLength(responseBody);
  if (cap === undefined || stored + bytes <= cap) return { requestBody, responseBody, bytes };
  return { requestBody: kBodiesNotKept, responseBody: kBodiesNotKept, bytes: 0 };
}
