// pg-transactional-outbox's side, used as its README says:
//   node peer.mjs setup  --pg DIR --listener polling|replication
//       creates its outbox and inbox tables with its DatabaseSetup SQL (table, grants, and the
//       polling function and indexes, or the publication and the replication slot)
//   node peer.mjs outbox --pg DIR --amqp URL --listener polling|replication [--batch B]
//                        [--poll-ms MS]
//       its outbox listener; the handler publishes each message to exchange "bench" with
//       amqplib's confirm channel (persistent, message id = the outbox id) and waits for the
//       broker's confirm before the library marks the message processed
//   node peer.mjs inbox  --pg DIR --amqp URL --queue Q --listener polling|replication
//                        [--batch B] [--poll-ms MS] [--prefetch P]
//       its inbox: a RabbitMQ consumer stores each delivery with initializeMessageStorage in a
//       transaction and acks it after the commit; its inbox listener runs the handler (the
//       business write, INSERT INTO bench_effects) in the transaction that marks it processed
// Runs until SIGTERM, then shuts the listener down and exits 0.
import amqp from 'amqplib';
import pg from 'pg';
import {
  DatabaseSetup,
  createReplicationFullConcurrencyController,
  executeTransaction,
  getDefaultLogger,
  initializeMessageStorage,
  initializePollingMessageListener,
  initializeReplicationMessageListener,
  IsolationLevel,
} from 'pg-transactional-outbox';
import { nowMs, options, pgConfig } from './common.mjs';

const opts = options(process.argv.slice(2));
const mode = opts._[0];
const listenerType = opts.listener ?? 'polling';
const batch = Number(opts.batch ?? 100);
const pollMs = Number(opts['poll-ms'] ?? 100);
const logger = getDefaultLogger(`peer-${mode}`);
logger.level = 'warn';

const names = (outboxOrInbox) => ({
  outboxOrInbox,
  table: outboxOrInbox,
  publication: `${outboxOrInbox}_pub`,
  slot: `${outboxOrInbox}_slot`,
  nextMessages: `next_${outboxOrInbox}_messages`,
});

function listenerConfig(outboxOrInbox) {
  const n = names(outboxOrInbox);
  const settings = {
    dbSchema: 'public',
    dbTable: n.table,
    // The outbox as its README's producer example; the inbox with both protections, as its
    // README advises for handlers.
    enableMaxAttemptsProtection: outboxOrInbox === 'inbox',
    enablePoisonousMessageProtection: outboxOrInbox === 'inbox',
    messageCleanupIntervalInMs: 0,
  };
  const dbListenerConfig = pgConfig(opts.pg);
  if (listenerType === 'replication') {
    return {
      outboxOrInbox, dbListenerConfig, dbHandlerConfig: pgConfig(opts.pg),
      settings: { ...settings, dbPublication: n.publication, dbReplicationSlot: n.slot },
    };
  }
  return {
    outboxOrInbox, dbListenerConfig, dbHandlerConfig: pgConfig(opts.pg),
    settings: {
      ...settings,
      nextMessagesFunctionName: n.nextMessages,
      nextMessagesBatchSize: batch,
      nextMessagesPollingIntervalInMs: pollMs,
    },
  };
}

function startListener(config, handlers) {
  if (listenerType === 'replication') {
    // Messages without order between them, as "parallel" ones for the polling listener.
    return initializeReplicationMessageListener(config, handlers, logger, {
      concurrencyStrategy: createReplicationFullConcurrencyController(),
    })[0];
  }
  return initializePollingMessageListener(config, handlers, logger)[0];
}

async function setup() {
  const client = new pg.Client(pgConfig(opts.pg));
  await client.connect();
  for (const outboxOrInbox of ['outbox', 'inbox']) {
    const n = names(outboxOrInbox);
    const config = {
      outboxOrInbox, database: 'postgres', schema: 'public', table: n.table,
      listenerRole: 'postgres', publication: n.publication, replicationSlot: n.slot,
      nextMessagesName: n.nextMessages,
    };
    await client.query(DatabaseSetup.dropAndCreateTable(config));
    await client.query(DatabaseSetup.grantPermissions(config));
    if (listenerType === 'replication') {
      await client.query(DatabaseSetup.setupReplicationCore(config));
      // "This must be run in a separate database transaction": one statement each.
      for (const statement of DatabaseSetup.setupReplicationSlot(config).split(';')) {
        const sql = statement.replace(/--.*$/gm, '').trim();
        if (sql) await client.query(sql);
      }
    } else {
      await client.query(DatabaseSetup.createPollingFunction(config));
      await client.query(DatabaseSetup.setupPollingIndexes(config));
    }
  }
  await client.end();
}

async function outbox() {
  const connection = await amqp.connect(opts.amqp);
  const channel = await connection.createConfirmChannel();
  const publish = (message) => new Promise((resolve, reject) => {
    channel.publish('bench', '', Buffer.from(JSON.stringify(message.payload)), {
      persistent: true, messageId: message.id, contentType: 'application/json',
    }, (err) => (err ? reject(err) : resolve()));
  });
  const shutdown = startListener(listenerConfig('outbox'), { handle: publish });
  return async () => {
    await shutdown();
    await connection.close();
  };
}

async function inbox() {
  const config = listenerConfig('inbox');
  const pool = new pg.Pool(pgConfig(opts.pg));
  const storeInboxMessage = initializeMessageStorage(config, logger);
  const connection = await amqp.connect(opts.amqp);
  const channel = await connection.createChannel();
  const handler = {
    aggregateType: 'order',
    messageType: 'OrderPaid',
    handle: async (message, client) => {
      await client.query('INSERT INTO bench_effects (order_no, amount) VALUES ($1, $2)',
        [message.payload.order, message.payload.amount]);
    },
  };
  const shutdown = startListener(config, [handler]);
  await channel.prefetch(Number(opts.prefetch ?? 100));
  console.log(`consuming at ${nowMs()}`);
  await channel.consume(opts.queue, async (delivery) => {
    const payload = JSON.parse(delivery.content.toString());
    const message = {
      id: delivery.properties.messageId, aggregateType: 'order',
      aggregateId: String(payload.order), messageType: 'OrderPaid', payload,
      concurrency: 'parallel', createdAt: new Date().toISOString(),
    };
    await executeTransaction(await pool.connect(), async (client) => {
      await storeInboxMessage(message, client);
    }, IsolationLevel.ReadCommitted);
    channel.ack(delivery);
  });
  return async () => {
    await connection.close();
    await shutdown();
    await pool.end();
  };
}

if (mode === 'setup') {
  await setup();
} else {
  const stop = mode === 'outbox' ? await outbox() : await inbox();
  console.log(`peer ${mode} listener (${listenerType}) started`);
  process.once('SIGTERM', async () => {
    await stop();
    process.exit(0);
  });
}
