/**
 * The session set-up of createDb's connections on the real MariaDB: `SET time_zone` runs once per
 * physical connection, not once per query (Kysely runs onCreateConnection for each connection
 * object it has not seen), and every connection stays in UTC, including one opened after a query
 * timeout destroyed its predecessor.
 *
 * Counted per session (Com_set_option of the connection that answered), so other files' work on the
 * shared server cannot disturb it; no database is needed.
 */
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createDb, type Db, type DbTimeouts } from '../../../src/infra/db.js';
import { testMysqlUrl } from '../../../kit/services.js';

interface SessionRow {
  id: string;
  zone: string;
  /** SET statements this session has run so far. */
  sets: string;
  /** CURRENT_TIMESTAMP (what column defaults use) less UTC, in seconds. */
  offset: string;
}

const opened: Db[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.destroy()));
});

function open(poolSize: number, timeouts?: DbTimeouts): Db {
  const db = createDb({ mysqlUrl: testMysqlUrl(), poolSize, ...(timeouts ? { timeouts } : {}) });
  opened.push(db);
  return db;
}

/** The answering session's id, zone, SET count and clock offset; `pauseS` holds it so that a concurrent query takes another connection. */
async function session(db: Db, pauseS = 0): Promise<SessionRow> {
  const { rows } = await sql<{ id: unknown; zone: string; sets: unknown; utc_offset: unknown }>`
    SELECT CONNECTION_ID() AS id, @@session.time_zone AS zone,
           (SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'COM_SET_OPTION') AS sets,
           TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), CURRENT_TIMESTAMP) AS utc_offset, SLEEP(${pauseS}) AS paused`.execute(db);
  const row = rows[0]!;
  return { id: String(row.id), zone: row.zone, sets: String(row.sets), offset: String(row.utc_offset) };
}

/** Queries one after another, in pairs (two connections busy at once) and in a transaction. */
async function manyQueries(db: Db): Promise<SessionRow[]> {
  const rows: SessionRow[] = [];
  for (let i = 0; i < 20; i += 1) rows.push(await session(db));
  for (let i = 0; i < 3; i += 1) rows.push(...(await Promise.all([session(db, 0.05), session(db, 0.05)])));
  rows.push(...(await db.transaction().execute(async (trx) => [await session(trx), await session(trx)])));
  for (let i = 0; i < 5; i += 1) rows.push(await session(db));
  return rows;
}

describe('createDb sessions', () => {
  it.each([
    ['with timeouts (the bounded pool)', { queryMs: 5_000, connectMs: 5_000 }],
    ['without timeouts', undefined],
  ])('sets the time zone once per physical connection, %s, and every connection is in UTC', async (_, timeouts) => {
    const rows = await manyQueries(open(2, timeouts));
    const connections = new Set(rows.map((row) => row.id));
    expect(connections.size).toBe(2);
    expect(rows.map((row) => row.sets)).toEqual(rows.map(() => '1'));
    expect(new Set(rows.map((row) => row.zone))).toEqual(new Set(['+00:00']));
    expect(new Set(rows.map((row) => row.offset))).toEqual(new Set(['0']));
  });

  it('sets the time zone of the connection that replaces one a query timeout destroyed, once', async () => {
    const db = open(1, { queryMs: 300, connectMs: 5_000 });
    const first = await session(db);
    await expect(sql`SELECT SLEEP(2)`.execute(db)).rejects.toThrow(/MySQL/);
    const after = [await session(db), await session(db), await session(db)];
    expect(after.map((row) => row.id)).toEqual(after.map(() => after[0]!.id));
    expect(after[0]!.id).not.toBe(first.id);
    expect(after.map(({ zone, sets, offset }) => ({ zone, sets, offset }))).toEqual(after.map(() => ({ zone: '+00:00', sets: '1', offset: '0' })));
  });
});
