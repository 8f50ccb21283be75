// What a teacher (a chat model through the proxy) answered for each text of a job, kept the moment a call returns:
// a job that runs again after a restart reads what was bought and asks only for the rest. Rows are written by the
// job's holder only (a lease that lapsed writes nothing) and go with the model (ON DELETE CASCADE).
import type { JobLease } from './types.js';

export type TeacherOutcome = 'labelled' | 'refused' | 'invalid' | 'stopped';

/** The position of the row that says why labelling stopped early (outcome 'stopped', the reason in detail). */
export const kStoppedPosition = -1;

/** One text's answer from the teacher. */
export interface TeacherTextRow {
  /** The text's position in the request's `texts`. */
  position: number;
  text: string;
  outcome: TeacherOutcome;
  /** The label as JSON (boolean, class name, or array of labels); null unless `labelled`. */
  label: string | null;
  /** What came back instead of a label (refused, invalid), cut short; null when labelled. */
  detail: string | null;
  /** Which of the job's calls answered it (1, 2, ...): texts of one call share a number. */
  call: number;
  /** This text's share of its call's tokens and time (a call labels several texts). */
  tokensIn: number;
  tokensOut: number;
  ms: number;
}

/** The teacher's answers of each job. */
export interface TeacherTexts {
  /** Every answer kept for the model, by position. */
  list(modelId: string): Promise<TeacherTextRow[]>;
  /** Keeps answers (a position answered again replaces the old row); false, and nothing kept, when the lease is not the job's. */
  record(modelId: string, lease: JobLease, rows: readonly TeacherTextRow[]): Promise<boolean>;
}

/** Row columns in the order of the INSERT statements of both stores. */
export function teacherRowValues(modelId: string, row: TeacherTextRow): unknown[] {
  return [modelId, row.position, row.text, row.outcome, row.label, row.detail, row.call, row.tokensIn, row.tokensOut, row.ms];
}

/** A row as both stores read it back (PostgreSQL BIGINT arrives as a string). */
export function teacherRowFrom(r: Record<string, unknown>): TeacherTextRow {
  return {
    position: Number(r.position),
    text: String(r.text),
    outcome: r.outcome as TeacherOutcome,
    label: (r.teacher_label as string | null) ?? null,
    detail: (r.detail as string | null) ?? null,
    call: Number(r.call_number ?? 0),
    tokensIn: Number(r.tokens_in ?? 0),
    tokensOut: Number(r.tokens_out ?? 0),
    ms: Number(r.ms ?? 0),
  };
}

export const kTeacherColumns = 'position, text, outcome, teacher_label, detail, call_number, tokens_in, tokens_out, ms';
