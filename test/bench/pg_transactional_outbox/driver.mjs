// The same producer and consumer for both sides.
//   node driver.mjs outbox --side ours|peer --pg DIR --amqp URL --queue Q --messages N
//                          [--producers P] [--rate R]
//       P connections commit N messages, one a transaction (BEGIN; store; COMMIT): ours with
//       SELECT inbox.send('bench', payload), the peer's with its initializeMessageStorage. With
//       --rate R the commits are paced at R a second (0: as fast as they go). A consumer of queue
//       Q (bound to exchange "bench") notes when each message id arrives, until all arrived or
//       none for 10 s. Prints one JSON line: the messages that arrived, the rate from the first
//       commit to the last arrival, the commit rate, and the latency from each COMMIT's return
//       to the arrival of its message (p50, p99, max; of those that arrived), in ms.
//       With --backlog-spawn FILE, the relay is not running yet: after the last COMMIT the
//       driver starts it (bash FILE, its output to FILE.log) and stops it (SIGTERM) at the end;
//       drain_rate is then the rate from the first arrival to the last.
//   node driver.mjs reset --amqp URL
//       declares exchange "bench" (fanout) bound to queue "bench", and queue "inbox-bench"
//       (all durable), and purges both queues
//   node driver.mjs publish --amqp URL --queue Q --messages N --duplicates D
//       publishes N messages (and D second copies of some of them) to Q: the deliveries of the
//       inbox comparison; prints nothing
//   node driver.mjs inbox-ours --pg DIR --amqp URL --queue Q --messages N [--prefetch P]
//       consumes Q: each delivery is SELECT inbox.apply('bench', id, 'bench_effect(jsonb)',
//       payload) (a statement, its own transaction), acked after it returns
//   node driver.mjs wait-effects --pg DIR --messages N --since MS
//       waits until bench_effects has N rows, or none came for 10 s; prints the rows, the
//       distinct messages among them and the rate since MS (when consuming started)
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { openSync } from 'node:fs';
import amqp from 'amqplib';
import pg from 'pg';
import { getDefaultLogger, initializeMessageStorage } from 'pg-transactional-outbox';
import { nowMs, options, payloadOf, percentile, pgConfig, sleep } from './common.mjs';

const opts = options(process.argv.slice(2));
const mode = opts._[0];
const messages = Number(opts.messages ?? 10000);

function peerStore() {
  const logger = getDefaultLogger('driver');
  logger.level = 'warn';
  const store = initializeMessageStorage({
    outboxOrInbox: 'outbox', settings: { dbSchema: 'public', dbTable: 'outbox' },
  }, logger);
  return async (client, n) => {
    const id = randomUUID();
    await store({
      id, aggregateType: 'order', aggregateId: String(n), messageType: 'OrderPaid',
      payload: payloadOf(n), concurrency: 'parallel', createdAt: new Date().toISOString(),
    }, client);
    return id;
  };
}

function oursStore() {
  return async (client, n) => {
    const result = await client.query("SELECT inbox.send('bench', $1::jsonb) AS id",
      [JSON.stringify(payloadOf(n))]);
    return result.rows[0].id;
  };
}

async function outbox() {
  const store = opts.side === 'peer' ? peerStore() : oursStore();
  const producers = Number(opts.producers ?? 4);
  const rate = Number(opts.rate ?? 0);
  const committed = new Map();
  const arrived = new Map();
  let duplicates = 0;
  let allArrived;
  const done = new Promise((resolve) => { allArrived = resolve; });

  const connection = await amqp.connect(opts.amqp);
  const channel = await connection.createChannel();
  await channel.consume(opts.queue, (delivery) => {
    const id = delivery.properties.messageId;
    if (arrived.has(id)) duplicates++;
    else arrived.set(id, nowMs());
    if (arrived.size === messages) allArrived();
  }, { noAck: true });

  const clients = [];
  for (let i = 0; i < producers; i++) {
    const client = new pg.Client(pgConfig(opts.pg));
    await client.connect();
    clients.push(client);
  }
  let next = 0;
  const started = nowMs();
  let firstCommit = Infinity;
  let lastCommit = 0;
  await Promise.all(clients.map(async (client) => {
    for (;;) {
      const n = next++;
      if (n >= messages) return;
      if (rate > 0) {
        const due = started + (n * 1000) / rate;
        const wait = due - nowMs();
        if (wait > 0) await sleep(wait);
      }
      await client.query('BEGIN');
      const id = await store(client, n);
      await client.query('COMMIT');
      const at = nowMs();
      committed.set(id, at);
      firstCommit = Math.min(firstCommit, at);
      lastCommit = Math.max(lastCommit, at);
    }
  }));
  let relay;
  let relayExited;
  if (opts['backlog-spawn']) {
    const log = openSync(`${opts['backlog-spawn']}.log`, 'w');
    relay = spawn('bash', [opts['backlog-spawn']], { stdio: ['ignore', log, log] });
    relayExited = new Promise((resolve) => relay.once('exit', resolve));
  }
  // Every message, or 10 s without a new arrival: what has not come by then is reported missing.
  let lastSeen = nowMs();
  let seen = arrived.size;
  while (arrived.size < messages) {
    await Promise.race([done, sleep(100)]);
    if (arrived.size !== seen) {
      seen = arrived.size;
      lastSeen = nowMs();
    } else if (nowMs() - lastSeen > 10000) break;
  }
  if (relay) {
    if (relay.exitCode === null && relay.signalCode === null) relay.kill('SIGTERM');
    await relayExited;
  }
  const lastArrival = Math.max(...arrived.values());
  const firstArrival = Math.min(...arrived.values());
  const latencies = [];
  for (const [id, at] of committed) {
    if (arrived.has(id)) latencies.push(arrived.get(id) - at);
  }
  latencies.sort((a, b) => a - b);
  const round = (x) => Math.round(x * 10) / 10;
  console.log(JSON.stringify({
    side: opts.side, messages, arrived: arrived.size, duplicates,
    unknown: [...arrived.keys()].filter((id) => !committed.has(id)).length,
    rate: Math.round(arrived.size / ((lastArrival - firstCommit) / 1000)),
    commit_rate: Math.round(messages / ((lastCommit - started) / 1000)),
    drain_rate: Math.round((arrived.size - 1) / ((lastArrival - firstArrival) / 1000)),
    p50_ms: round(percentile(latencies, 50)), p99_ms: round(percentile(latencies, 99)),
    max_ms: round(latencies[latencies.length - 1]),
  }));
  await Promise.all(clients.map((client) => client.end()));
  await connection.close();
}

async function reset() {
  const connection = await amqp.connect(opts.amqp);
  const channel = await connection.createChannel();
  await channel.assertExchange('bench', 'fanout', { durable: true });
  for (const queue of ['bench', 'inbox-bench']) {
    await channel.assertQueue(queue, { durable: true });
    await channel.purgeQueue(queue);
  }
  await channel.bindQueue('bench', 'bench', '');
  await connection.close();
}

async function publish() {
  const connection = await amqp.connect(opts.amqp);
  const channel = await connection.createConfirmChannel();
  const duplicates = Number(opts.duplicates ?? 0);
  const every = duplicates > 0 ? Math.max(1, Math.floor(messages / duplicates)) : 0;
  let copies = 0;
  for (let n = 0; n < messages; n++) {
    const body = Buffer.from(JSON.stringify(payloadOf(n)));
    const properties = { persistent: true, messageId: randomUUID(),
      contentType: 'application/json' };
    channel.sendToQueue(opts.queue, body, properties);
    if (every && n % every === 0 && copies < duplicates) {
      channel.sendToQueue(opts.queue, body, properties);
      copies++;
    }
    if (n % 1000 === 999) await channel.waitForConfirms();
  }
  await channel.waitForConfirms();
  await connection.close();
}

async function inboxOurs() {
  const pool = new pg.Pool(pgConfig(opts.pg));
  const connection = await amqp.connect(opts.amqp);
  const channel = await connection.createChannel();
  await channel.prefetch(Number(opts.prefetch ?? 100));
  console.log(`consuming at ${nowMs()}`);
  await channel.consume(opts.queue, async (delivery) => {
    await pool.query("SELECT inbox.apply('bench', $1, 'bench_effect(jsonb)', $2::jsonb)",
      [delivery.properties.messageId, delivery.content.toString()]);
    channel.ack(delivery);
  });
  process.once('SIGTERM', async () => {
    await connection.close();
    await pool.end();
    process.exit(0);
  });
}

async function waitEffects() {
  const client = new pg.Client(pgConfig(opts.pg));
  await client.connect();
  const since = Number(opts.since);
  let count = 0;
  let countAt = nowMs();
  // Every effect, or 10 s without a new one: what is missing by then is reported.
  while (count < messages && nowMs() - countAt < 10000) {
    await sleep(20);
    const { rows } = await client.query('SELECT count(*)::int AS n FROM bench_effects');
    if (rows[0].n !== count) {
      count = rows[0].n;
      countAt = nowMs();
    }
  }
  const { rows } = await client.query(
    'SELECT count(*)::int AS n, count(DISTINCT order_no)::int AS distinct_n FROM bench_effects');
  console.log(JSON.stringify({ effects: rows[0].n, distinct: rows[0].distinct_n,
    rate: Math.round(count / ((countAt - since) / 1000)) }));
  await client.end();
}

if (mode === 'outbox') await outbox();
else if (mode === 'reset') await reset();
else if (mode === 'publish') await publish();
else if (mode === 'inbox-ours') await inboxOurs();
else if (mode === 'wait-effects') await waitEffects();
else throw new Error(`unknown mode ${mode}`);
