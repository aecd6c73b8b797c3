// The Node peers of `cargo xtask bench --backend postgres`: graphile-worker
// and pg-boss, one workload on one fresh database per call (created and
// dropped by the driver, `bench/pg_peer.py js-peers`).
//
//   node peers.mjs SYSTEM WORKLOAD URL JOBS WORKERS
//
// SYSTEM: `graphile` or `pgboss`. WORKLOAD:
//
// - `drain`: enqueue JOBS no-op jobs (untimed, chunks of 1000), then drain
//   them with WORKERS concurrent workers in this one process, one job at a
//   time. graphile-worker: `run()` with `concurrency` WORKERS, a no-op task,
//   timed from the call to `run()` (its pool connects inside the time) until
//   the last job's task has run and its jobs table, polled on one
//   connection, is empty (every completion committed; `runner.stop()` can
//   return before the last completions commit). pg-boss: WORKERS async loops of `fetch(queue)` +
//   `complete(queue, id)` over a pool of WORKERS + 2 connections, timed
//   until every loop has found the queue empty.
// - `batch`: as `drain`, batched. graphile-worker: `localQueue` of 64 jobs
//   and `completeJobBatchDelay` 0 (completions of the same tick in one
//   statement); pg-boss: `fetch(queue, {batchSize: 16})` + `complete(queue,
//   ids)`.
// - `enqueue`: JOBS jobs in chunks of 1000, each chunk one call
//   (graphile-worker `WorkerUtils.addJobs`, pg-boss `insert`), timed from
//   the first chunk to the last; building a chunk's arguments is inside the
//   time.
// - `seed` (graphile-worker only): its schema and JOBS no-op jobs (chunks of
//   1000), nothing else: the jobs the `sql-graphile` floor row of
//   `bench/pg_peer.py` drains with graphile-worker's own statements. Prints
//   the `noop` task's ID (`task_id`) beside the version.
// - `wake` (graphile-worker only; pg-boss polls and has no wake-up): one
//   idle worker (`concurrency` 1, LISTEN/NOTIFY); JOBS times, `addJob` of one
//   job after a 20 ms pause; the latency is from just before `addJob` to the
//   start of the job's task, in this same process.
//
// Afterwards the end state is checked (no job left; graphile-worker keeps
// no row of a completed job, pg-boss marks it `completed`). Prints one line
// `RESULT {json}`: `jobs_per_s` (drain, batch, enqueue) or `p50_ms`,
// `p95_ms` (wake), and the system's version; with `BENCH_PG_POSTMASTER`
// set (the PID of the server's postmaster, on this machine), also
// `server_cpu_s` for drain, batch and enqueue: the CPU time the server's
// processes used over the timed window (as `bench/pg_peer.py` reads it).

import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import PgBoss from "pg-boss";
import pg from "pg";

const require = createRequire(import.meta.url);
const CHUNK = 1000;
const BATCH = 16;
const LOCAL_QUEUE = 64;
const QUEUE = "bench";
const WAKE_PAUSE_MS = 20;
const DRAIN_GRACE_MS = 10000;

const [system, workload, url, jobsArg, workersArg] = process.argv.slice(2);
const jobs = Number(jobsArg);
const workers = Number(workersArg);
if (!["graphile", "pgboss"].includes(system) || !url || !(jobs > 0) || !(workers > 0)) {
  console.error("usage: node peers.mjs graphile|pgboss drain|batch|enqueue|wake|seed URL JOBS WORKERS");
  process.exit(2);
}

const logger = new Logger(() => (level, message) => {
  if (level === "error") console.error(message);
});

const POSTMASTER = Number(process.env.BENCH_PG_POSTMASTER) || null;

// The CPU seconds the server's postmaster and all its processes have used
// so far (its own, its reaped children's, its live or unreaped children's:
// the fields of /proc/PID/stat after the command), or null without a
// postmaster; read again until no child was reaped during the read
// (`_server_cpu_s` of `bench/pg_peer.py` reads the same).
function statFields(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  return f.slice(f.lastIndexOf(")") + 1).trim().split(/\s+/);
}

function serverCpuS() {
  if (POSTMASTER === null) return null;
  for (let attempt = 0; attempt < 100; attempt++) {
    const own = statFields(POSTMASTER);
    let children = 0;
    for (const entry of readdirSync("/proc")) {
      if (!/^[0-9]+$/.test(entry) || Number(entry) === POSTMASTER) continue;
      let f;
      try {
        f = statFields(entry);
      } catch {
        continue; // not a child, or reaped: then the check below fails
      }
      if (Number(f[1]) === POSTMASTER) children += Number(f[11]) + Number(f[12]);
    }
    const again = statFields(POSTMASTER);
    if (again[13] === own[13] && again[14] === own[14]) {
      const mine = [11, 12, 13, 14].reduce((t, i) => t + Number(again[i]), 0);
      return (mine + children) / 100; // USER_HZ, 100 on Linux
    }
  }
  return null;
}

// `{ server_cpu_s }` of a window that began at `cpu0` (nothing without a
// postmaster).
function serverWindow(cpu0) {
  const cpu1 = serverCpuS();
  return cpu0 === null || cpu1 === null ? {} : { server_cpu_s: cpu1 - cpu0 };
}

function quantile(sorted, q) {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

async function count(sql) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return Number((await c.query(sql)).rows[0].n);
  } finally {
    await c.end();
  }
}

// ------------------------------------------------------------ graphile

async function graphileSeed(utils, n) {
  for (let i = 0; i < n; i += CHUNK) {
    const specs = [];
    for (let j = i; j < Math.min(i + CHUNK, n); j++) specs.push({ identifier: "noop", payload: {} });
    await utils.addJobs(specs);
  }
}

async function graphileLeft() {
  return count("SELECT count(*) AS n FROM graphile_worker._private_jobs");
}

// The jobs left once none is left or DRAIN_GRACE_MS have passed, polled on
// one connection.
async function graphileDrained() {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const until = performance.now() + DRAIN_GRACE_MS;
    for (;;) {
      const q = "SELECT count(*) AS n FROM graphile_worker._private_jobs";
      const n = Number((await c.query(q)).rows[0].n);
      if (n === 0 || performance.now() > until) return n;
      await new Promise((r) => setTimeout(r, 1));
    }
  } finally {
    await c.end();
  }
}

async function graphile() {
  const utils = await makeWorkerUtils({ connectionString: url, logger });
  await utils.migrate();
  const version = require("graphile-worker/package.json").version;
  try {
    if (workload === "enqueue") {
      const cpu0 = serverCpuS();
      const t0 = performance.now();
      await graphileSeed(utils, jobs);
      const s = (performance.now() - t0) / 1000;
      const cpu = serverWindow(cpu0);
      const left = await graphileLeft();
      if (left !== jobs) throw new Error(`graphile-worker: ${left} of ${jobs} jobs enqueued`);
      return { jobs_per_s: jobs / s, seconds: s, version, ...cpu };
    }
    if (workload === "seed") {
      await graphileSeed(utils, jobs);
      const left = await graphileLeft();
      if (left !== jobs) throw new Error(`graphile-worker: ${left} of ${jobs} jobs seeded`);
      const task_id = await count(
        "SELECT id AS n FROM graphile_worker._private_tasks WHERE identifier = 'noop'",
      );
      return { seeded: jobs, task_id, version };
    }
    if (workload === "wake") {
      const started = [];
      let onStart = null;
      const runner = await run({
        connectionString: url,
        concurrency: 1,
        noHandleSignals: true,
        logger,
        taskList: {
          noop: async () => {
            started.push(performance.now());
            onStart?.();
          },
        },
      });
      const lat = [];
      for (let i = 0; i < jobs; i++) {
        await new Promise((r) => setTimeout(r, WAKE_PAUSE_MS));
        const ran = new Promise((r) => (onStart = r));
        const t0 = performance.now();
        await utils.addJob("noop", {});
        await ran;
        lat.push(started[started.length - 1] - t0);
      }
      await runner.stop();
      lat.sort((a, b) => a - b);
      return { p50_ms: quantile(lat, 0.5), p95_ms: quantile(lat, 0.95), samples: jobs, version };
    }
    await graphileSeed(utils, jobs);
    let done = 0;
    let allDone;
    const finished = new Promise((r) => (allDone = r));
    const preset =
      workload === "batch"
        ? { worker: { localQueue: { size: LOCAL_QUEUE }, completeJobBatchDelay: 0 } }
        : { worker: {} };
    const cpu0 = serverCpuS();
    const t0 = performance.now();
    const runner = await run({
      connectionString: url,
      concurrency: workers,
      noHandleSignals: true,
      logger,
      preset,
      taskList: {
        noop: async () => {
          if (++done === jobs) allDone();
        },
      },
    });
    await finished;
    // The last handlers have returned; their completions commit after
    // them. The drain ends when every job's completion has committed.
    const left = await graphileDrained();
    const s = (performance.now() - t0) / 1000;
    const cpu = serverWindow(cpu0);
    await runner.stop();
    if (left !== 0) throw new Error(`graphile-worker: ${left} jobs left after the drain`);
    return { jobs_per_s: jobs / s, seconds: s, version, ...cpu };
  } finally {
    await utils.release();
  }
}

// -------------------------------------------------------------- pg-boss

async function pgbossSeed(boss, n) {
  for (let i = 0; i < n; i += CHUNK) {
    const specs = [];
    for (let j = i; j < Math.min(i + CHUNK, n); j++) specs.push({ name: QUEUE, data: {} });
    await boss.insert(specs);
  }
}

async function pgbossStates() {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query("SELECT state::text AS s, count(*) AS n FROM pgboss.job GROUP BY state");
    return Object.fromEntries(r.rows.map((x) => [x.s, Number(x.n)]));
  } finally {
    await c.end();
  }
}

async function pgboss() {
  if (workload === "wake") throw new Error("pg-boss has no wake-up (it polls)");
  if (workload === "seed") throw new Error("only graphile-worker has a seed workload");
  const boss = new PgBoss({
    connectionString: url,
    max: workers + 2,
    supervise: false,
    schedule: false,
  });
  boss.on("error", (e) => console.error(e));
  await boss.start();
  await boss.createQueue(QUEUE);
  const version = require("pg-boss/package.json").version;
  try {
    if (workload === "enqueue") {
      const cpu0 = serverCpuS();
      const t0 = performance.now();
      await pgbossSeed(boss, jobs);
      const s = (performance.now() - t0) / 1000;
      const cpu = serverWindow(cpu0);
      const st = await pgbossStates();
      if (st.created !== jobs) throw new Error(`pg-boss: states ${JSON.stringify(st)} after enqueue`);
      return { jobs_per_s: jobs / s, seconds: s, version, ...cpu };
    }
    await pgbossSeed(boss, jobs);
    const size = workload === "batch" ? BATCH : 1;
    // Open the pool's connections before the clock starts, as the others do.
    await Promise.all(Array.from({ length: workers }, () => boss.getQueue(QUEUE)));
    let done = 0;
    const cpu0 = serverCpuS();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: workers }, async () => {
        for (;;) {
          const got = await boss.fetch(QUEUE, { batchSize: size });
          if (!got || got.length === 0) return;
          await boss.complete(
            QUEUE,
            got.map((j) => j.id),
          );
          done += got.length;
        }
      }),
    );
    const s = (performance.now() - t0) / 1000;
    const cpu = serverWindow(cpu0);
    const st = await pgbossStates();
    if (done !== jobs || st.completed !== jobs) {
      throw new Error(`pg-boss: ${done} handled, states ${JSON.stringify(st)}`);
    }
    return { jobs_per_s: jobs / s, seconds: s, version, ...cpu };
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
}

const result = await (system === "graphile" ? graphile() : pgboss());
console.log(
  "RESULT " + JSON.stringify({ system, workload, jobs, workers, ...result }),
);
process.exit(0);
