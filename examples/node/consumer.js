'use strict';
// An idempotent consumer with inbox, in Node.js (pg from npm: `npm ci` installs the locked version).
//
// Applies payment messages to account balances exactly once, however often the broker delivers
// them. The loop is broker-agnostic: receiveBatch() stands in for your broker's client and ack()
// for its acknowledgement. Each batch is one transaction: claim every message with the inbox,
// apply the payments claimed now, commit, then ack the whole batch. The transaction is retried
// on serialization failures (40001) and deadlocks (40P01).
//
//     CREATE EXTENSION inbox;
//     CREATE TABLE accounts (id text PRIMARY KEY, balance numeric NOT NULL);
//
// Connects with the PG* environment variables (PGHOST, PGPORT, PGDATABASE, PGUSER, ...).

const { Client } = require('pg');

const CONSUMER = 'payments';
const MAX_ATTEMPTS = 5;
const RETRYABLE = new Set(['40001', '40P01']);

// ---------------------------------------------------------------------------- the inbox

// The one place that talks to the inbox. Resolves to the set of ids claimed now (first
// deliveries: do their work in this transaction); the others were already processed.
//
// Each id is claimed once, in sorted order, so that two instances claiming overlapping batches
// take their locks in the same order. With inbox 1.1 this becomes one call,
// `SELECT inbox.claim_batch($1, $2)` with [CONSUMER, messageIds], which does the same; and a
// message whose inbox.receive() outcome is 'poisoned' goes to the dead-letter queue.
async function claim(client, messageIds) {
  const claimed = new Set();
  for (const id of [...new Set(messageIds)].sort()) {
    const { rows } = await client.query('SELECT inbox.claim($1, $2) AS claimed', [CONSUMER, id]);
    if (rows[0].claimed) claimed.add(id);
  }
  return claimed;
}

// ---------------------------------------------------------------------------- the broker

function payment(i) {
  return { id: `pay-${String(i).padStart(4, '0')}`, account: `acct-${i % 5}`, amount: ((i * 37) % 1000) + 1 };
}

// Stands in for the broker, which delivers at least once: payments 1 to 120 in batches of 10;
// every 7th payment is delivered twice in its batch, and each batch starts with the first
// message of the previous one again (its ack was lost).
function* receiveBatch() {
  let redelivery = [];
  for (let start = 1; start <= 120; start += 10) {
    const batch = [];
    for (let i = start; i < start + 10; i++) batch.push(payment(i));
    for (let i = start; i < start + 10; i++) if (i % 7 === 0) batch.push(payment(i));
    yield [...redelivery, ...batch];
    redelivery = [batch[0]];
  }
}

// Stands in for the broker's acknowledgement, sent only after the commit.
async function ack(batch) {}

// ---------------------------------------------------------------------------- the consumer

// One transaction: resolves to { processed, skipped }.
async function applyBatch(client, batch) {
  let processed = 0;
  let skipped = 0;
  await client.query('BEGIN');
  try {
    const todo = await claim(client, batch.map((message) => message.id));
    for (const message of batch) {
      if (!todo.delete(message.id)) {
        skipped++; // a duplicate: already processed, here or earlier in this batch
        continue;
      }
      await client.query(
        'INSERT INTO accounts (id, balance) VALUES ($1, $2) ' +
          'ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance',
        [message.account, message.amount],
      );
      processed++;
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
  return { processed, skipped };
}

async function main() {
  const client = new Client();
  await client.connect();
  const totals = { processed: 0, skipped: 0, retries: 0 };
  try {
    for (const batch of receiveBatch()) {
      for (let attempt = 1; ; attempt++) {
        try {
          const { processed, skipped } = await applyBatch(client, batch);
          totals.processed += processed;
          totals.skipped += skipped;
          break;
        } catch (err) {
          if (!RETRYABLE.has(err.code) || attempt === MAX_ATTEMPTS) throw err;
          totals.retries++;
        }
      }
      await ack(batch);
    }
  } finally {
    await client.end();
  }
  console.log(Object.entries(totals).map(([k, v]) => `${k}=${v}`).join(' '));
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
