import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { maskedConfig, maskedVariables, maskUrl, storeLocation, variableLines } from '../../../src/config/display.js';
import { SERVICE_DOMAINS } from '../../../src/service/domains.js';
import { readConfig } from '../../../src/config/load.js';

describe('URLs are masked from their parsed parts', () => {
  test('a password holding @ is hidden whole (the issue: root:…(masked)@ssSECRET1@…)', () => {
    assert.equal(maskUrl('mysql://root:p@ssSECRET1@127.0.0.1:3306/x'), 'mysql://root:…(masked)@127.0.0.1:3306/x');
    assert.equal(maskUrl('redis://:p@ssSECRET2@127.0.0.1:6379'), 'redis://:…(masked)@127.0.0.1:6379');
    assert.equal(maskUrl('smtp://mailer:p@ssSECRET3@mail.example:587'), 'smtp://mailer:…(masked)@mail.example:587');
    assert.equal(maskUrl('mysql://user@tenant:p@ss@db.example/shop'), 'mysql://user%40tenant:…(masked)@db.example/shop', 'a user name holding @ too');
  });

  test('a password in the query (node-postgres reads ?password=) and other credential parameters are hidden', () => {
    assert.equal(maskUrl('postgres://u@h/db?password=SECRET4'), 'postgres://u@h/db?password=…(masked)');
    assert.equal(
      maskUrl('postgres://u@h/db?sslmode=verify-full&sslpassword=S5&application_name=inbox&token=T6&api_key=K7'),
      'postgres://u@h/db?sslmode=verify-full&sslpassword=…(masked)&application_name=inbox&token=…(masked)&api_key=…(masked)',
    );
    assert.equal(maskUrl('postgres://u:pw@h/db?PassWord=x'), 'postgres://u:…(masked)@h/db?PassWord=…(masked)');
    assert.equal(maskUrl('postgres://u@h/db?pass%77ord=x'), 'postgres://u@h/db?pass%77ord=…(masked)', 'a name spelled with escapes');
  });

  test('what holds no credential is shown as written', () => {
    assert.equal(maskUrl('mysql://root@127.0.0.1:3306/webhook_inbox'), 'mysql://root@127.0.0.1:3306/webhook_inbox');
    assert.equal(maskUrl('postgres://u@h/db?sslmode=require'), 'postgres://u@h/db?sslmode=require');
    assert.equal(maskUrl('sqlite:data/webhook-inbox.db'), 'sqlite:data/webhook-inbox.db');
    assert.equal(maskUrl('redis://:pw%40rd@cache:6379/0'), 'redis://:…(masked)@cache:6379/0');
  });

  test('a URL that does not parse never shows its password: everything up to its last @ is hidden, and its query', () => {
    assert.equal(maskUrl('mysql://u:pa/ss@SECRET@db:3306/x'), 'mysql://…(masked)@db:3306/x');
    assert.equal(maskUrl('mysql://u:p@SECRET@d b/x?password=SECRET'), 'mysql://…(masked)@d b/x?…(masked)');
    assert.equal(maskUrl('mysql://u:SECRET'), '…(masked)', 'without an @, where the password ends cannot be told');
    assert.equal(maskUrl('not a url SECRET'), '…(masked)');
  });

  test("config shows none of the issue's secrets, as text or as JSON", () => {
    const { config, variables } = readConfig(
      {
        DATABASE_URL: 'postgres://u@h/db?password=SECRET4',
        REDIS_URL: 'redis://:p@ssSECRET2@127.0.0.1:6379',
        SMTP_URL: 'smtp://mailer:p@ssSECRET3@mail.example:587',
        MAIL_FROM: 'receipts@shop.example',
        FULFILLMENT_URL: 'https://fulfil.example/SECRET5/orders',
      },
      { domains: SERVICE_DOMAINS },
    );
    const text = JSON.stringify(maskedConfig(config)) + JSON.stringify(maskedVariables(variables)) + variableLines(variables).join('\n');
    assert.doesNotMatch(text, /SECRET\d/);
    assert.match(text, /DATABASE_URL=postgres:\/\/u@h\/db\?password=…\(masked\)/);
    assert.match(text, /REDIS_URL=redis:\/\/:…\(masked\)@127\.0\.0\.1:6379/);
  });
});

describe('where the store is, for the start log', () => {
  test("a SQLite file's absolute path", () => {
    assert.equal(storeLocation('sqlite:./data/webhook-inbox.db', '/srv/inbox'), path.resolve('/srv/inbox/data/webhook-inbox.db'));
    assert.equal(storeLocation('sqlite:/var/lib/webhook-inbox/inbox.db', '/srv/inbox'), '/var/lib/webhook-inbox/inbox.db');
  });

  test('a server and its database, without credentials or options', () => {
    assert.equal(storeLocation('mysql://root:p@ssSECRET1@127.0.0.1:3306/shop'), 'mysql://…@127.0.0.1:3306/shop');
    assert.equal(storeLocation('postgres://u@db.internal/shop?password=SECRET4&sslmode=require'), 'postgres://…@db.internal/shop');
    assert.equal(storeLocation('postgresql://db.internal:5433/shop'), 'postgresql://db.internal:5433/shop');
  });
});
