/**
 * LeanLoad is a load generator run as its own process (bench/lib/Load.ts `leanLoad` and `alternatingLoad` start it on
 * the load core): N keep-alive connections over plain `node:net`, each sending one prebuilt request, reading the
 * answer's status line and `content-length` and counting the body's bytes without keeping them (read into one reused
 * buffer), then sending the next — one request in flight a connection, as autocannon without pipelining. It exists
 * because autocannon, on the one core the bench gives the load, could not keep a bare `node:http` server answering
 * 50 KiB bodies busy (the server ran at about half a core, bench/results/mcp-baseline.md): the baseline measured the
 * load generator, not the server. Here the work per answer is a header search and a subtraction per chunk, so the
 * server is the limit.
 *
 * argv[2] is the JSON of a LoadRequest or of an AlternatingRequest (Load.ts); stdout gets one JSON line.
 * - A LoadRequest (steady): one request for `seconds`; requests/s as the mean of per-second samples (as autocannon
 *   reports it), the total, p50 and p99 latency in ms, non-2xx answers, socket errors and timeouts.
 * - An AlternatingRequest: several variants of a request (the two MCP eras of one call) on the same connections, in
 *   slices of `sliceMs`. At the end of a slice no new request is sent; once every answer in flight has arrived, the
 *   CPU of the watched processes (and of the watched core) is read from /proc, the next variant's request is sent on
 *   every connection, and its slice starts. So no request of one variant is in flight while another's slice is
 *   timed, and each slice's CPU is that variant's own. The measured slices go A B, B A, A B… (each pass reversing the
 *   last), every variant getting the same number of slices and the same place on average, so that a machine getting
 *   steadily faster or slower favours none. Per variant: requests ÷ the seconds of its slices, latencies, failures,
 *   and every slice as measured.
 * An answer not complete 10 s after its request is a timeout. An answer without `content-length` (chunked, or
 * close-delimited) is an error: the servers measured here always send one.
 *
 * Concurrency rule: one event loop; each connection's state is touched only by its own socket's events, and the
 * schedule (which request is sent, whether sending is paused) only by the slice and per-second timers and by the
 * completion that drains a slice.
 */
import * as Fs from "node:fs"
import * as Net from "node:net"
import type { AlternatingRequest, AlternatingResult, LoadRequest, LoadResult, Slice, Watch } from "./Load.js"

const TIMEOUT_MS = 10_000
const HEADER_END = Buffer.from("\r\n\r\n")
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i
/** Every socket reads into this one buffer; large enough for an answer of the bench's bodies in one read. */
const READ_BUFFER = Buffer.alloc(256 * 1024)
/** USER_HZ: 100 on every Linux architecture Node supports. */
const CLOCK_TICKS = 100

const wireOf = (target: URL, body: string, headers: Readonly<Record<string, string>>): Buffer => {
  const payload = Buffer.from(body)
  const head = [
    `POST ${target.pathname}${target.search} HTTP/1.1`,
    `host: ${target.host}`,
    ...Object.entries(headers).filter(([k]) => k.toLowerCase() !== "content-length").map(([k, v]) => `${k}: ${v}`),
    `content-length: ${payload.length}`,
    "",
    ""
  ].join("\r\n")
  return Buffer.concat([Buffer.from(head), payload])
}

interface PoolHooks {
  /** The request an idle connection sends next, or undefined to leave it idle until `kick`. */
  readonly next: () => Buffer | undefined
  readonly answered: (status: number, ms: number) => void
  readonly failed: (kind: "error" | "timeout") => void
  /** A request in flight ended without an answer (its socket closed). */
  readonly abandoned: () => void
}

/** `connections` keep-alive connections to `target`, each sending what `hooks.next` gives whenever it is idle. */
const pool = (target: URL, connections: number, hooks: PoolHooks) => {
  let open = true
  const port = Number(target.port || 80)
  const connect = () => {
    let busy = false
    let connected = false
    /** Bytes of a status line and headers not yet complete, or undefined. */
    let pending: Buffer | undefined
    /** Body bytes still to come; -1 while reading the head. */
    let remaining = -1
    let status = 0
    let sentAt = 0
    let timer: NodeJS.Timeout | undefined
    // `onread` into one buffer: no allocation and no 'data' event per read (node:net "socket.connect(options)"). Each
    // read is handled before the next can arrive, and what must outlive it (an unfinished head) is copied.
    const socket = Net.connect({
      host: target.hostname,
      port,
      noDelay: true,
      onread: {
        buffer: READ_BUFFER,
        callback: (n: number, buffer: Uint8Array) => {
          received(buffer, n)
          return true
        }
      }
    })
    const send = () => {
      if (!open || busy || !connected) return
      const wire = hooks.next()
      if (wire === undefined) return
      busy = true
      sentAt = performance.now()
      timer = setTimeout(() => {
        hooks.failed("timeout")
        socket.destroy()
      }, TIMEOUT_MS)
      socket.write(wire)
    }
    const complete = () => {
      clearTimeout(timer)
      busy = false
      hooks.answered(status, performance.now() - sentAt)
      send()
    }
    const received = (buffer: Uint8Array, n: number) => {
      let data = Buffer.from(buffer.buffer, buffer.byteOffset, n)
      let offset = 0
      while (offset < data.length) {
        if (remaining < 0) {
          const buffered = pending === undefined ? data.subarray(offset) : Buffer.concat([pending, data.subarray(offset)])
          const end = buffered.indexOf(HEADER_END)
          if (end < 0) {
            pending = Buffer.from(buffered)
            return
          }
          pending = undefined
          const text = buffered.toString("latin1", 0, end)
          status = Number(text.slice(9, 12))
          const length = CONTENT_LENGTH.exec(text)
          if (length === null) {
            hooks.failed("error")
            socket.destroy()
            return
          }
          remaining = Number(length[1])
          data = buffered
          offset = end + HEADER_END.length
          if (remaining === 0) {
            remaining = -1
            complete()
            continue
          }
        }
        const take = Math.min(remaining, data.length - offset)
        remaining -= take
        offset += take
        if (remaining === 0) {
          remaining = -1
          complete()
        }
      }
    }
    socket.on("connect", () => {
      connected = true
      send()
    })
    socket.on("error", () => hooks.failed("error"))
    socket.on("close", () => {
      clearTimeout(timer)
      const wasBusy = busy
      busy = false
      // A connection the server (or a timeout) closed is replaced, as autocannon reconnects.
      if (open) sockets[sockets.indexOf(self)] = connect()
      if (wasBusy) hooks.abandoned()
    })
    const self = { send, destroy: () => socket.destroy(), busy: () => busy }
    return self
  }
  const sockets = Array.from({ length: connections }, connect)
  return {
    /** Sends on every idle connection (after `next` starts returning a request again). */
    kick: () => {
      for (const s of sockets) s.send()
    },
    inFlight: () => sockets.reduce((n, s) => n + (s.busy() ? 1 : 0), 0),
    close: () => {
      open = false
      for (const s of sockets) s.destroy()
    }
  }
}

const percentiles = (latencies: ReadonlyArray<number>) => {
  const sorted = Float64Array.from(latencies).sort()
  const at = (p: number) => (sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!)
  return { p50Ms: at(50), p99Ms: at(99) }
}

const finish = (result: unknown) => process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0))

const steady = (request: LoadRequest) => {
  const wire = wireOf(new URL(request.url), request.body, request.headers)
  const latencies: Array<number> = []
  const samples: Array<number> = []
  let thisSecond = 0
  let total = 0
  let non2xx = 0
  let errors = 0
  let timeouts = 0
  let running = true
  const connections = pool(new URL(request.url), request.connections, {
    next: () => (running ? wire : undefined),
    answered: (status, ms) => {
      latencies.push(ms)
      total++
      thisSecond++
      if (status < 200 || status > 299) non2xx++
    },
    failed: (kind) => (kind === "error" ? errors++ : timeouts++),
    abandoned: () => undefined
  })
  const tick = setInterval(() => {
    samples.push(thisSecond)
    thisSecond = 0
    if (samples.length < request.seconds) return
    running = false
    clearInterval(tick)
    connections.close()
    const result: LoadResult = {
      requestsPerSecond: samples.reduce((a, b) => a + b, 0) / samples.length,
      total,
      ...percentiles(latencies),
      non2xx,
      errors,
      timeouts
    }
    finish(result)
  }, 1000)
}

const read = (path: string): string | undefined => {
  try {
    return Fs.readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

/** utime + stime (and, with `children`, the reaped children's cutime + cstime) of one process, in seconds. */
const processCpu = (pid: number, children: boolean): number => {
  const stat = read(`/proc/${pid}/stat`)
  if (stat === undefined) return 0
  // Fields after the command name (which may contain spaces): utime, stime, cutime, cstime are the 12th to 15th.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(f[11]) + Number(f[12]) + (children ? Number(f[13]) + Number(f[14]) : 0)) / CLOCK_TICKS
}

/**
 * A database server's CPU so far: the postmaster with the children it has reaped (an autovacuum worker that came and
 * went), and its live children (backends, checkpointer, autovacuum).
 */
const databaseCpu = (postmaster: number): number =>
  (read(`/proc/${postmaster}/task/${postmaster}/children`) ?? "").trim().split(" ").filter((p) => p !== "")
    .reduce((sum, child) => sum + processCpu(Number(child), false), processCpu(postmaster, true))

/** Seconds of one CPU so far: busy (neither idle, iowait nor steal), stolen by the hypervisor, and all, from /proc/stat. */
const coreTimes = (core: string) => {
  const line = (read("/proc/stat") ?? "").split("\n").find((l) => l.startsWith(`cpu${core} `))
  if (line === undefined) return undefined
  const v = line.trim().split(/\s+/).slice(1).map(Number)
  const total = v.reduce((a, b) => a + b, 0)
  return { busy: (total - v[3]! - v[4]! - v[7]!) / CLOCK_TICKS, steal: v[7]! / CLOCK_TICKS, total: total / CLOCK_TICKS }
}

const snapshot = (watch: Watch) => ({
  at: performance.now(),
  server: watch.server === undefined ? undefined : processCpu(watch.server, false),
  database: watch.database === undefined ? undefined : databaseCpu(watch.database),
  core: watch.core === undefined ? undefined : coreTimes(watch.core)
})

const alternating = (request: AlternatingRequest) => {
  const target = new URL(request.url)
  const wires = request.variants.map((v) => wireOf(target, v.body, v.headers))
  const n = wires.length
  // Warm-up A B A B…, then the measured passes, each the reverse of the one before: A B, B A, A B…
  const order = (pass: number) => Array.from({ length: n }, (_, i) => (pass % 2 === 0 ? i : n - 1 - i))
  const schedule: Array<{ readonly variant: number; readonly measured: boolean }> = [
    ...Array.from({ length: request.warmupSlices * n }, (_, i) => ({ variant: i % n, measured: false })),
    ...Array.from({ length: request.slices }, (_, pass) => order(pass).map((variant) => ({ variant, measured: true }))).flat()
  ]
  const totals = wires.map(() => ({ latencies: [] as Array<number>, non2xx: 0, errors: 0, timeouts: 0 }))
  const slices: Array<Slice> = []
  let index = 0
  let sending = false
  let requests = 0
  let started = snapshot(request.watch)
  const current = () => schedule[index]!
  const connections = pool(target, request.connections, {
    next: () => (sending ? wires[current().variant] : undefined),
    answered: (status, ms) => {
      if (index >= schedule.length) return
      requests++
      const t = totals[current().variant]!
      if (current().measured) t.latencies.push(ms)
      if (status < 200 || status > 299) t.non2xx++
      drained()
    },
    failed: (kind) => {
      if (index >= schedule.length) return
      const t = totals[current().variant]!
      if (kind === "error") t.errors++
      else t.timeouts++
    },
    abandoned: () => drained()
  })
  const begin = () => {
    started = snapshot(request.watch)
    requests = 0
    sending = true
    connections.kick()
    setTimeout(() => {
      sending = false
      drained()
    }, request.sliceMs)
  }
  /** Ends the slice once sending has stopped and the last answer in flight is in. */
  const drained = () => {
    if (sending || connections.inFlight() > 0 || index >= schedule.length) return
    const ended = snapshot(request.watch)
    if (current().measured) {
      const delta = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : b - a)
      const serverCpu = delta(started.server, ended.server)
      const databaseCpu = delta(started.database, ended.database)
      const coreBusy = delta(started.core?.busy, ended.core?.busy)
      const coreSteal = delta(started.core?.steal, ended.core?.steal)
      const coreTotal = delta(started.core?.total, ended.core?.total)
      slices.push({
        variant: current().variant,
        requests,
        seconds: (ended.at - started.at) / 1000,
        ...(serverCpu === undefined ? {} : { serverCpu }),
        ...(databaseCpu === undefined ? {} : { databaseCpu }),
        ...(coreBusy === undefined || coreSteal === undefined || coreTotal === undefined ? {} : { coreBusy, coreSteal, coreTotal })
      })
    }
    index++
    if (index < schedule.length) return begin()
    connections.close()
    const result: AlternatingResult = {
      variants: totals.map((t, variant) => {
        const own = slices.filter((s) => s.variant === variant)
        const seconds = own.reduce((a, s) => a + s.seconds, 0)
        const total = own.reduce((a, s) => a + s.requests, 0)
        const cpu = own.every((s) => s.serverCpu !== undefined) ? own.reduce((a, s) => a + s.serverCpu!, 0) : undefined
        return {
          requestsPerSecond: total / seconds,
          total,
          ...percentiles(t.latencies),
          non2xx: t.non2xx,
          errors: t.errors,
          timeouts: t.timeouts,
          ...(cpu === undefined ? {} : { serverCores: cpu / seconds })
        }
      }),
      slices
    }
    finish(result)
  }
  // The connections open during the warm-up slices (Load.ts asks for at least one of each variant).
  begin()
}

const request = JSON.parse(process.argv[2]!) as LoadRequest | AlternatingRequest
if ("variants" in request) alternating(request)
else steady(request)
