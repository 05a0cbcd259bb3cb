// Shared by the driver and the peer's listeners: options, connections, timing, the message.
import { performance } from 'node:perf_hooks';

export function options(argv) {
  const opts = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg.startsWith('--')) opts[arg.slice(2)] = argv[++i];
    else opts._.push(arg);
  }
  return opts;
}

// Milliseconds since the epoch, with fractions: comparable between the processes of one machine.
export const nowMs = () => performance.timeOrigin + performance.now();

// node-postgres connects to a Unix socket when host is its directory.
export const pgConfig = (host, max = 10) => ({ host, user: 'postgres', database: 'postgres', max });

// The payload both sides send: about 100 bytes of JSON.
export const payloadOf = (n) => ({
  type: 'OrderPaid', order: n, amount: 20, note: 'a message of about 100 bytes, the same for both',
});

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
