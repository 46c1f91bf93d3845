/**
 * The baseline of the IRC client listener section (bench/sections/Listener.ts): a bare `node:net` server that does
 * the least a bouncer's fan-out must — it reads each upstream connection's lines and writes every complete line, as
 * read, to each client connection of that network — and holds idle client sockets. The first line of a connection
 * says what it is: `UP <network>` (an upstream: its lines go to that network's clients), `CLIENT <network>` (a
 * client: answered `OK`, then only written to), or `MEM` (answered with `process.memoryUsage()` after full garbage
 * collections and `process.cpuUsage()`, as JSON, then closed; run with --expose-gc). Run as a child process pinned to the server core; prints
 * `listening <port>` once it accepts connections.
 *
 * Concurrency: one event loop; the state is the clients of each network.
 */
import * as Net from "node:net"

const clients = new Map<string, Set<Net.Socket>>()

const onUpstream = (socket: Net.Socket, network: string, first: Buffer) => {
  let pending: Buffer = Buffer.alloc(0)
  const forward = (chunk: Buffer) => {
    const data = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    const end = data.lastIndexOf(0x0a)
    if (end === -1) {
      pending = data
      return
    }
    const lines = data.subarray(0, end + 1)
    pending = Buffer.from(data.subarray(end + 1))
    for (const client of clients.get(network) ?? []) client.write(lines)
  }
  socket.on("data", forward)
  if (first.length > 0) forward(first)
}

const onClient = (socket: Net.Socket, network: string) => {
  let set = clients.get(network)
  if (set === undefined) clients.set(network, (set = new Set()))
  set.add(socket)
  socket.on("data", () => {})
  socket.on("close", () => set.delete(socket))
  socket.write("OK\r\n")
}

const onMem = (socket: Net.Socket) => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc !== undefined) for (let i = 0; i < 4; i++) gc()
  socket.end(`${JSON.stringify({ ...process.memoryUsage(), cpu: process.cpuUsage() })}\n`)
}

const server = Net.createServer({ noDelay: true }, (socket) => {
  socket.on("error", () => socket.destroy())
  let head: Buffer = Buffer.alloc(0)
  const first = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk])
    const lf = head.indexOf(0x0a)
    if (lf === -1) return
    socket.off("data", first)
    const [kind = "", network = ""] = head.subarray(0, lf).toString("utf8").trim().split(" ")
    const rest = head.subarray(lf + 1)
    if (kind === "UP") onUpstream(socket, network, rest)
    else if (kind === "CLIENT") onClient(socket, network)
    else if (kind === "MEM") onMem(socket)
    else socket.destroy()
  }
  socket.on("data", first)
})

server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  process.stdout.write(`listening ${typeof address === "object" && address ? address.port : 0}\n`)
})
process.on("SIGTERM", () => process.exit(0))
