/**
 * Which database a migration runs on, for the migrations whose statements differ per dialect (a
 * PostgreSQL-only storage setting, index or function). Migrations get a `Kysely<unknown>`, so they
 * ask its adapter. Not a migration itself: `index.ts` lists the migrations by name.
 */
import { PostgresAdapter, type Kysely } from 'kysely';

export const isPostgres = (db: Kysely<unknown>): boolean => db.getExecutor().adapter instanceof PostgresAdapter;
