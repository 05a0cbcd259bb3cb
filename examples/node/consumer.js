'use strict';
// An idempotent consumer with inbox, in Node.js (pg from npm: `npm ci` installs the locked version).
//
// Applies payment messages to account balances exactly once, however often the broker delivers
// them. The loop is broker-agnostic: Broker stands in for your broker's client. Each batch is one
// transaction: inbox.apply_batch claims every message and runs the handler apply_payment(jsonb)
// for the new ones, each in a subtransaction of its own. After the commit, each message is acked,
// nacked (its handler failed: the broker delivers it again) or dead-lettered (it failed
// max_attempts times: poisoned). The transaction is retried on serialization failures (40001)
// and deadlocks (40P01).
//
// The database: examples/schema.sql (the table examples.accounts, the handler
// examples.apply_payment(jsonb), the consumer examples.payments with max_attempts 3). It connects
// with the PG* environment variables. After the set-up of examples/README.md, from the top of the
// tree:
//
//     (cd examples/node && npm ci)
//     export PGHOST=localhost PGDATABASE=inbox_examples
//     export PGUSER=inbox_example PGPASSWORD=inbox_example
//     node examples/node/consumer.js
//
// prints (each payment processed once, the copies acked as duplicates, the malformed payment
// failed three times and then dead-lettered):
//
//     delivered=156 processed=120 duplicate=32 failed=3 poisoned=1 retries=0
//     balances: acct-0=11524 acct-1=11972 acct-2=11860 acct-3=11748 acct-4=11636

const { Client } = require('pg');

const CONSUMER = 'examples.payments';
const HANDLER = 'examples.apply_payment(jsonb)';
const MAX_TRANSACTION_ATTEMPTS = 5;
const RETRYABLE = new Set(['40001', '40P01']);

// ---------------------------------------------------------------------------- the inbox

// One transaction: resolves to each message's outcome, in the order of the batch (processed,
// duplicate, failed or poisoned).
async function applyBatch(client, batch) {
  const messages = batch.map((message) => ({ id: message.id, payload: message.payment }));
  await client.query('BEGIN');
  try {
    const { rows } = await client.query('SELECT outcome FROM inbox.apply_batch($1, $2, $3)', [
      CONSUMER,
      HANDLER,
      JSON.stringify(messages),
    ]);
    await client.query('COMMIT');
    return rows.map((row) => row.outcome);
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

async function applyWithRetries(client, batch, totals) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await applyBatch(client, batch);
    } catch (err) {
      if (!RETRYABLE.has(err.code) || attempt === MAX_TRANSACTION_ATTEMPTS) throw err;
      totals.retries++;
    }
  }
}

// ---------------------------------------------------------------------------- the broker

function payment(i) {
  return {
    id: `pay-${String(i).padStart(4, '0')}`,
    payment: { account: `acct-${i % 5}`, amount: ((i * 37) % 1000) + 1 },
  };
}

// Stands in for your broker, which delivers at least once: payments 1 to 120, every 7th one
// published twice, and one malformed payment; in batches of 10. Every 10th ack is lost, so that
// its message comes back in the next batch; a nacked message comes back later.
class Broker {
  constructor() {
    this.queue = [];
    for (let i = 1; i <= 120; i++) {
      this.queue.push(payment(i));
      if (i % 7 === 0) this.queue.push(payment(i));
      if (i === 3) this.queue.push({ id: 'pay-malformed', payment: { account: 'acct-0', amount: 'twelve' } });
    }
    this.redelivered = [];
    this.acks = 0;
    this.delivered = 0;
  }

  receive() {
    const batch = [...this.redelivered, ...this.queue.splice(0, 10)];
    this.redelivered = [];
    this.delivered += batch.length;
    return batch;
  }

  ack(message) {
    this.acks++;
    if (this.acks % 10 === 0) this.redelivered.push(message);
  }

  nack(message) {
    this.queue.push(message);
  }

  deadLetter(message) {}
}

// ---------------------------------------------------------------------------- the consumer

async function main() {
  const broker = new Broker();
  const totals = { processed: 0, duplicate: 0, failed: 0, poisoned: 0, retries: 0 };
  const client = new Client();
  await client.connect();
  let balances;
  try {
    for (let batch = broker.receive(); batch.length > 0; batch = broker.receive()) {
      const outcomes = await applyWithRetries(client, batch, totals);
      batch.forEach((message, i) => {
        const outcome = outcomes[i];
        totals[outcome]++;
        if (outcome === 'processed' || outcome === 'duplicate') broker.ack(message);
        else if (outcome === 'failed') broker.nack(message);
        else if (outcome === 'poisoned') broker.deadLetter(message);
        else throw new Error(`${message.id}: unexpected outcome ${outcome}`);
      });
    }
    const { rows } = await client.query(
      "SELECT string_agg(id || '=' || balance, ' ' ORDER BY id) AS balances FROM examples.accounts",
    );
    balances = rows[0].balances;
  } finally {
    await client.end();
  }
  const counts = Object.entries(totals).map(([k, v]) => `${k}=${v}`);
  console.log(`delivered=${broker.delivered} ${counts.join(' ')}`);
  console.log(`balances: ${balances}`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
