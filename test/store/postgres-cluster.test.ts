import pg from 'pg';
import { describe, expect, it } from 'vitest';

import { startPostgres, usePostgres } from '../_support/postgres.js';

const pgServer = usePostgres();

describe('the throwaway PostgreSQL cluster the store tests run on', () => {
  it('listens on 127.0.0.1 and hands out one empty database per call', async () => {
    expect(pgServer.cluster.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
    const first = await pgServer.cluster.createDatabase();
    const second = await pgServer.cluster.createDatabase();
    expect(first).not.toBe(second);
    const client = new pg.Client({ connectionString: first });
    await client.connect();
    const { rows } = await client.query<{ db: string; tables: string }>(
      "SELECT current_database() AS db, (SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public') AS tables",
    );
    await client.end();
    expect(rows).toEqual([{ db: first.slice(first.lastIndexOf('/') + 1), tables: '0' }]);
  });

  it('fails, never skips, when the server binaries are missing', async () => {
    const saved = process.env.SVC_PG_BIN;
    process.env.SVC_PG_BIN = '/nonexistent/pg/bin';
    try {
      await expect(startPostgres()).rejects.toThrow(
        "PostgreSQL server binaries (initdb, pg_ctl) not found in /nonexistent/pg/bin: install Debian's 'postgresql' " +
          'package (apt-get install postgresql) or set SVC_PG_BIN to their folder',
      );
    } finally {
      if (saved === undefined) delete process.env.SVC_PG_BIN;
      else process.env.SVC_PG_BIN = saved;
    }
  });
});
