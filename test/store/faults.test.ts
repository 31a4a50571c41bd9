/** Which driver errors are storage faults (src/store/faults.ts), and which stay bugs. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { storageFault } from '../../src/store/faults.js';
import { NotFoundError } from '../../src/store/errors.js';
import { postgresError, sqliteError, systemError } from '../support/faulty-store.js';

it('classifies SQLite, system and PostgreSQL faults by code, never by a message that quotes values', () => {
  assert.equal(storageFault(sqliteError('SQLITE_FULL')), 'SQLITE_FULL');
  assert.equal(storageFault(sqliteError('SQLITE_IOERR_FSYNC')), 'SQLITE_IOERR');
  assert.equal(storageFault(sqliteError('SQLITE_READONLY_DBMOVED')), 'SQLITE_READONLY');
  assert.equal(storageFault(systemError('ENOSPC')), 'ENOSPC');
  assert.equal(storageFault(systemError('EROFS')), 'EROFS');
  assert.equal(storageFault(postgresError('53100', 'could not extend file "base/1/2": No space left on device')), '53100');
  assert.equal(storageFault(postgresError('08006', 'connection failure')), '08006');
  assert.equal(storageFault(postgresError('40P01', 'deadlock detected')), '40P01');
  assert.equal(storageFault(new Error('timeout exceeded when trying to connect')), 'connection');
});

it('leaves the caller\'s mistakes and bugs alone', () => {
  assert.equal(storageFault(sqliteError('SQLITE_CONSTRAINT_PRIMARYKEY', 'UNIQUE constraint failed')), undefined);
  assert.equal(storageFault(sqliteError('SQLITE_ERROR', 'no such table: audit')), undefined);
  assert.equal(storageFault(postgresError('23505', 'duplicate key value violates unique constraint')), undefined);
  assert.equal(storageFault(postgresError('42P01', 'relation "audit" does not exist')), undefined);
  assert.equal(storageFault(new NotFoundError('Machine', 'm1')), undefined);
  assert.equal(storageFault(new TypeError('x is undefined')), undefined);
  assert.equal(storageFault('ENOSPC'), undefined);
});
