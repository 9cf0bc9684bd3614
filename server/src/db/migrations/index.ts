/**
 * The ordered list of migrations. Imported statically (not read from the folder at run time) so
 * the compiled service and the tests apply exactly the same files. Append; never edit or reorder.
 */
import type { Migration } from 'kysely';
import * as m0001 from './0001-foundation.js';
import * as m0002 from './0002-decisions.js';
import * as m0003 from './0003-webhooks.js';
import * as m0004 from './0004-verification.js';
import * as m0005 from './0005-portal.js';
import * as m0006 from './0006-auto-loans.js';
import * as m0007 from './0007-underwriting.js';
import * as m0008 from './0008-policy-versions.js';
import * as m0009 from './0009-decision-metrics.js';
import * as m0010 from './0010-event-history.js';
import * as m0011 from './0011-delivery-lease-index.js';
import * as m0012 from './0012-auth-change-notifications.js';
import * as m0013 from './0013-consumer-history-index.js';
import * as m0014 from './0014-delivery-queue-autovacuum.js';
import * as m0015 from './0015-webhook-sends-in-flight.js';
import * as m0016 from './0016-webhook-pending-index.js';
import * as m0017 from './0017-delivery-list-index.js';
import * as m0018 from './0018-audit-record-compression.js';
import * as m0019 from './0019-data-key-check.js';
import * as m0020 from './0020-consumer-history-function.js';
import * as m0021 from './0021-audit-id-in-row.js';
import * as m0022 from './0022-password-resets.js';
import * as m0023 from './0023-notice-settings.js';
import * as m0024 from './0024-edit-versions.js';
import * as m0025 from './0025-edit-authors.js';
import * as m0026 from './0026-delivery-rows-lighter.js';
import * as m0027 from './0027-edit-times.js';
import * as m0028 from './0028-decision-change-notifications.js';
import * as m0029 from './0029-decision-answers.js';

export const migrations: Record<string, Migration> = {
  '0001-foundation': m0001,
  '0002-decisions': m0002,
  '0003-webhooks': m0003,
  '0004-verification': m0004,
  '0005-portal': m0005,
  '0006-auto-loans': m0006,
  '0007-underwriting': m0007,
  '0008-policy-versions': m0008,
  '0009-decision-metrics': m0009,
  '0010-event-history': m0010,
  '0011-delivery-lease-index': m0011,
  '0012-auth-change-notifications': m0012,
  '0013-consumer-history-index': m0013,
  '0014-delivery-queue-autovacuum': m0014,
  '0015-webhook-sends-in-flight': m0015,
  '0016-webhook-pending-index': m0016,
  '0017-delivery-list-index': m0017,
  '0018-audit-record-compression': m0018,
  '0019-data-key-check': m0019,
  '0020-consumer-history-function': m0020,
  '0021-audit-id-in-row': m0021,
  '0022-password-resets': m0022,
  '0023-notice-settings': m0023,
  '0024-edit-versions': m0024,
  '0025-edit-authors': m0025,
  '0026-delivery-rows-lighter': m0026,
  '0027-edit-times': m0027,
  '0028-decision-change-notifications': m0028,
  '0029-decision-answers': m0029,
};
