/**
 * LeanLoad is a load generator run as its own process (bench/lib/Load.ts `leanLoad` starts it on the load core): N
 * keep-alive connections over plain `node:net`, each sending one prebuilt request, reading the answer's status line and
 * `content-length` and counting the body's bytes without keeping them (read into one reused buffer), then sending the
 * next — one request in flight a connection, as autocannon without pipelining. It exists because autocannon, on the one core the bench gives the load,
 * could not keep a bare `node:http` server answering 50 KiB bodies busy (the server ran at about half a core,
 * bench/results/mcp-baseline.md): the baseline measured the load generator, not the server. Here the work per answer is
 * a header search and a subtraction per chunk, so the server is the limit.
 *
 * argv[2] is the JSON of a LoadRequest; stdout gets one JSON line: requests/s as the mean of per-second samples (as
 * autocannon reports it), the total, p50 and p99 latency in ms, non-2xx answers, socket errors and timeouts (an answer
 * not complete 10 s after its request). An answer without `content-length` (chunked, or close-delimited) is an error:
 * the servers measured here always send one.
 *
 * Concurrency rule: one event loop; each connection's state is touched only by its own socket's events and the
 * per-second tick.
 */
import * as Net from "node:net"

interface Request {
  readonly url: string
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
  readonly connections: number
  readonly seconds: number
}

const TIMEOUT_MS = 10_000
const HEADER_END = Buffer.from("\r\n\r\n")
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i
/** Every socket reads into this one buffer; large enough for an answer of the bench's bodies in one read. */
const READ_BUFFER = Buffer.alloc(256 * 1024)

const run = (request: Request) => {
  const target = new URL(request.url)
  const body = Buffer.from(request.body)
  const headers = Object.entries(request.headers).filter(([k]) => k.toLowerCase() !== "content-length")
  const head = [
    `POST ${target.pathname}${target.search} HTTP/1.1`,
    `host: ${target.host}`,
    ...headers.map(([k, v]) => `${k}: ${v}`),
    `content-length: ${body.length}`,
    "",
    ""
  ].join("\r\n")
  const wire = Buffer.concat([Buffer.from(head), body])
  const port = Number(target.port || 80)

  const latencies: Array<number> = []
  const samples: Array<number> = []
  let thisSecond = 0
  let total = 0
  let non2xx = 0
  let errors = 0
  let timeouts = 0
  let running = true

  const open = () => {
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
    /** Bytes of a status line and headers not yet complete, or undefined. */
    let pending: Buffer | undefined
    /** Body bytes still to come; -1 while reading the head. */
    let remaining = -1
    let status = 0
    let sentAt = 0
    let timer: NodeJS.Timeout | undefined

    const send = () => {
      if (!running) return
      sentAt = performance.now()
      timer = setTimeout(() => {
        timeouts++
        socket.destroy()
      }, TIMEOUT_MS)
      socket.write(wire)
    }
    const complete = () => {
      clearTimeout(timer)
      latencies.push(performance.now() - sentAt)
      total++
      thisSecond++
      if (status < 200 || status > 299) non2xx++
      send()
    }

    socket.on("connect", send)
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
            errors++
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
    socket.on("error", () => {
      errors++
    })
    socket.on("close", () => {
      clearTimeout(timer)
      // A connection the server (or a timeout) closed is replaced, as autocannon reconnects.
      if (running) open()
    })
    return socket
  }

  const sockets = Array.from({ length: request.connections }, open)
  const tick = setInterval(() => {
    samples.push(thisSecond)
    thisSecond = 0
    if (samples.length < request.seconds) return
    running = false
    clearInterval(tick)
    for (const s of sockets) s.destroy()
    const sorted = Float64Array.from(latencies).sort()
    const at = (p: number) => (sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!)
    process.stdout.write(
      `${
        JSON.stringify({
          requestsPerSecond: samples.reduce((a, b) => a + b, 0) / samples.length,
          total,
          p50Ms: at(50),
          p99Ms: at(99),
          non2xx,
          errors,
          timeouts
        })
      }\n`,
      () => process.exit(0)
    )
  }, 1000)
}

run(JSON.parse(process.argv[2]!) as Request)
