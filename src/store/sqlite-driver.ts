import type Database from 'better-sqlite3';

import { requireOptional } from '../optional-deps.js';

/**
 * better-sqlite3's constructor, loaded on first use: it is an optional dependency (a native build), so importing
 * `svc-classify/server` or running with `--database postgres://...` works without it, and opening a SQLite store
 * without it says what to install.
 */
export function loadSqlite(): typeof Database {
  return requireOptional<typeof Database>('better-sqlite3', 'use PostgreSQL instead: --database postgres://... (no SQLite needed)');
}
