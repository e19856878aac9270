import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AdminForbiddenError, authorize, may, type Actor, type AdminPermission } from '../../../src/admin/access.js';
import { clientKey } from '../../../src/admin/sign-in-limit.js';

test('one rule per action: a viewer reads, dry-runs a replay and counts a bulk replay; changes need the operator', () => {
  const viewer: Actor = { name: 'victor', role: 'viewer', via: 'session' };
  const operator: Actor = { name: 'alice', role: 'operator', via: 'token' };
  const viewerMay: Record<AdminPermission, boolean> = {
    replay: false,
    replay_dry_run: true,
    bulk_replay_count: true,
    bulk_replay_start: false,
    bulk_replay_cancel: false,
    outbox_retry: false,
  };
  for (const [permission, allowed] of Object.entries(viewerMay) as Array<[AdminPermission, boolean]>) {
    assert.equal(may(viewer, permission), allowed, permission);
    assert.equal(may(operator, permission), true, permission);
    if (allowed) authorize(viewer, permission);
    else
      assert.throws(
        () => authorize(viewer, permission),
        (error: unknown) => error instanceof AdminForbiddenError && error.statusCode === 403,
      );
  }
});

test('the sign-in limit counts an IPv4 address, or the /64 of an IPv6 one', () => {
  assert.equal(clientKey('203.0.113.7'), '203.0.113.7');
  assert.equal(clientKey('::ffff:203.0.113.7'), '203.0.113.7', 'an IPv4 client of a dual-stack socket');
  assert.equal(clientKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  assert.equal(clientKey('2001:0db8:0001:0002:ffff::1'), '2001:db8:1:2::/64', 'every address of the /64 is one client');
  assert.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(clientKey('2001:DB8:0:0:1::'), '2001:db8:0:0::/64');
  assert.equal(clientKey('64:ff9b::192.0.2.1'), '64:ff9b:0:0::/64');
  assert.equal(clientKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.notEqual(clientKey('2001:db8:1:2::1'), clientKey('2001:db8:1:3::1'));
});
