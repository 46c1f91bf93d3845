/**
 * Several `belay serve` nodes on one PostgreSQL (BELAY_CLUSTER_ADDRESS; docs/decisions/several-nodes.md "Several nodes"), 30
 * networks on one scripted fake IRC server that counts live sessions per network (SessionLedger), through the faults
 * a cluster is for:
 *
 *   1. kill -9 of the busiest node: every network connected again on the survivors within 30 s;
 *   2. kill -9 of a second node right after: still every network (the cluster's own keepAlive fails here);
 *   3. two nodes join: networks move to them, each closed before it is opened again;
 *   4. SIGTERM of the node that held everything alone: it hands its networks over and exits within 20 s;
 *   5. one node's PostgreSQL link black-holed: its IRC sessions close before any other node opens them; SIGTERM then
 *      exits within 20 s without its database; once the server has ended its sessions, the last node takes over.
 *
 * After every step: never two live sessions of one network; `/mcp` on every running node sends for every network;
 * and at the end every line the fake server fed (and saw reach a node) is stored exactly once — except lines that
 * reached a node in the moments before that node was killed or cut off from its database, which it had no way to
 * store (they must still never be stored twice).
 */
import * as Crypto from "node:crypto"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { blackHoleProxy } from "../support/BlackHoleProxy.js"
import { freePort, type RunningBelay, runCli, startBelay } from "../support/BelayProcess.js"
import * as FakeIrcServer from "../support/FakeIrcServer.js"
import { storedTexts } from "../support/HistoryAudit.js"
import { makeSessionLedger } from "../support/SessionLedger.js"
import { describeMode, testEnvironment } from "../support/TestDatabase.js"

const NETWORKS = 30
const FAILOVER_BOUND_MS = 30_000
const EXIT_BOUND_MS = 20_000

const log = (line: string) => Effect.sync(() => console.log(`cluster: ${line}`))

const poll = <A>(what: string, boundMs: number, probe: () => Promise<A | undefined>) =>
  Effect.promise(async () => {
    const deadline = Date.now() + boundMs
    for (;;) {
      const value = await probe()
      if (value !== undefined) return value
      if (Date.now() > deadline) throw new Error(`${what}: not within ${boundMs} ms`)
      await new Promise((r) => setTimeout(r, 100))
    }
  })

const connectedOn = (node: RunningBelay) =>
  Effect.promise(async () => {
    const body = await (await fetch(`${node.url}/metrics`)).text()
    const match = /belay_connections\{state="connected"\} (\d+)/.exec(body)
    return match ? Number(match[1]) : 0
  })

const callTool = (url: string, token: string, name: string, args: Record<string, unknown>) =>
  Effect.promise(async () => {
    const res = await fetch(`${url}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } })
    })
    const json = await res.json() as { result?: { isError?: boolean; structuredContent?: unknown } }
    return json.result
  })

describe(`a cluster of belay nodes on ${describeMode}`, () => {
  it.scopedLive("networks fail over, move and hand over, never twice at once, and their history is whole", () =>
    Effect.gen(function*() {
      const started = Date.now()
      const ledger = makeSessionLedger()
      const irc = yield* FakeIrcServer.make({ onConnection: ledger.onConnection, timeout: "20 seconds" })
      const env = yield* testEnvironment({ LOG_LEVEL: "warning" })
      const databaseUrl = env.DATABASE_URL!
      const db = new URL(databaseUrl)
      // The embedded server listens on a Unix socket only (its URL's `host` parameter names the directory): the proxy
      // relays to that socket, and the proxied URL drops the parameter, or the node would go round the proxy.
      const socketDir = db.searchParams.get("host")
      const serverPort = Number(db.searchParams.get("port") ?? (db.port || 5432))
      const proxy = yield* blackHoleProxy(
        socketDir !== null && socketDir.startsWith("/")
          ? { path: Path.join(socketDir, `.s.PGSQL.${serverPort}`) }
          : { host: db.hostname, port: serverPort }
      )
      const proxied = new URL(databaseUrl)
      proxied.searchParams.delete("host")
      proxied.searchParams.delete("port")
      proxied.hostname = "127.0.0.1"
      proxied.port = String(proxy.port)
      const secretKey = Crypto.randomBytes(32).toString("base64")

      const startNode = (name: string, viaProxy = false) =>
        Effect.gen(function*() {
          const runnerPort = yield* freePort
          return yield* startBelay({
            ...env,
            BELAY_SECRET_KEY: secretKey,
            BELAY_CLUSTER_ADDRESS: `127.0.0.1:${runnerPort}`,
            BELAY_ADMIN_SOCKET: Path.join(env.BELAY_DATA_DIR!, `${name}.sock`),
            DATABASE_URL: viaProxy ? proxied.toString() : databaseUrl
          })
        })

      // One node first (it creates the cluster's tables), the account, a token and the networks through it.
      const nodes = new Map<string, RunningBelay>()
      nodes.set("n1", yield* startNode("n1"))
      const first = nodes.get("n1")!
      expect((yield* runCli(first.env, ["account", "add", "alice"], "a long password\n")).code).toBe(0)
      const minted = yield* runCli(first.env, ["token", "add", "alice", "--name", "t", "--scope", "read-write"])
      const token = minted.stdout.trim()
      const ids = new Map<string, number>()
      yield* Effect.forEach(Array.from({ length: NETWORKS }, (_, i) => `net${String(i + 1).padStart(2, "0")}`), (nick) =>
        Effect.gen(function*() {
          const added = yield* runCli(first.env, [
            "network", "add", "alice", "--name", nick, "--host", irc.host, "--port", String(irc.port), "--nick", nick
          ])
          expect(added.code).toBe(0)
          ids.set(nick, Number(added.stdout.trim()))
        }), { concurrency: 6, discard: true })
      nodes.set("n2", yield* startNode("n2"))
      nodes.set("n3", yield* startNode("n3"))

      /** Every network has a live session at the server, and every node's list_networks says it is connected. */
      const allLive = (what: string, boundMs = FAILOVER_BOUND_MS) =>
        Effect.gen(function*() {
          yield* poll(what, boundMs, async () => (ledger.liveNetworks().size === NETWORKS ? true : undefined))
          const liveAt = Date.now()
          yield* poll(`${what}: list_networks`, boundMs, async () => {
            for (const node of nodes.values()) {
              const result = await Effect.runPromise(callTool(node.url, token, "list_networks", {}))
              const listed = (result?.structuredContent as { networks?: Array<{ state: string }> } | undefined)?.networks
              if (listed?.filter((n) => n.state === "connected").length !== NETWORKS) return undefined
            }
            return true
          })
          return liveAt
        })

      /** The invariants of every step. */
      let step = 0
      const check = (label: string) =>
        Effect.gen(function*() {
          step++
          expect(ledger.duplicates()).toEqual([])
          for (const [name, node] of nodes) {
            yield* Effect.forEach([...ids], ([nick, networkId]) =>
              Effect.gen(function*() {
                const text = `mcp-${step}-${name}-${nick}`
                const result = yield* callTool(node.url, token, "send_message", { networkId, target: "feeder", text })
                expect(result?.structuredContent, `${label} at ${name}, ${nick}: ${JSON.stringify(result?.structuredContent)}`)
                  .toEqual({ ok: true })
                yield* poll(`${text} at the server`, 10_000, async () => ledger.received(nick).includes(text) ? true : undefined)
              }), { concurrency: 10, discard: true })
          }
          yield* log(`${label}: ok (${nodes.size} nodes, ${ledger.sessions().length} sessions so far)`)
        })

      yield* allLive("first start", 60_000)
      yield* log(`set-up: 3 nodes, ${NETWORKS} networks connected after ${Date.now() - started} ms`)
      yield* check("start")

      /** When a node was killed or cut off, and how long after that its sessions may still close. */
      const faults: Array<{ readonly at: number; readonly closingMs: number }> = []
      const busiest = Effect.gen(function*() {
        let best: [string, number] = ["", -1]
        for (const [name, node] of nodes) {
          const n = yield* connectedOn(node)
          if (n > best[1]) best = [name, n]
        }
        return best
      })

      // 1. kill -9 of the busiest node.
      for (const label of ["kill -9 of the busiest node", "a second kill -9 right after"]) {
        const [victim, held] = yield* busiest
        const t0 = Date.now()
        faults.push({ at: t0, closingMs: 2_000 })
        yield* nodes.get(victim)!.stop("SIGKILL")
        nodes.delete(victim)
        // Meanwhile a survivor is asked to send on every network: each call answers within the command bound (30 s),
        // sent or `not-connected` / `timeout`, never hanging.
        const asker = [...nodes.values()][0]!
        const during = yield* Effect.forEach([...ids], ([nick, networkId]) =>
          Effect.gen(function*() {
            const t = Date.now()
            const result = yield* callTool(asker.url, token, "send_message", { networkId, target: "feeder", text: `during-${step}-${nick}` })
            const answer = result?.structuredContent as { ok: boolean; error?: string } | undefined
            return { ms: Date.now() - t, answer: answer?.ok === true ? "ok" : answer?.error ?? "none" }
          }), { concurrency: "unbounded" }).pipe(Effect.fork)
        // The server sees the victim's sessions end, then the survivors open them again.
        yield* poll(`${label}: sessions closed`, 5_000, async () => (ledger.liveNetworks().size < NETWORKS ? true : undefined))
        const liveAt = yield* allLive(label)
        yield* log(
          `${label} (${victim}, ${held} networks): all ${NETWORKS} live at the server after ${liveAt - t0} ms, listed ` +
            `connected on every node after ${Date.now() - t0} ms`
        )
        const answers = yield* during.await.pipe(Effect.flatten)
        const tally = new Map<string, number>()
        for (const a of answers) tally.set(a.answer, (tally.get(a.answer) ?? 0) + 1)
        expect([...tally.keys()].every((k) => k === "ok" || k === "not-connected" || k === "timeout")).toBe(true)
        expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(32_000)
        yield* log(`${label}: calls during the failover: ${JSON.stringify(Object.fromEntries(tally))}, slowest ${
          Math.max(...answers.map((a) => a.ms))
        } ms`)
        yield* check(label)
      }

      // 3. Two nodes join (n5 reaches PostgreSQL through the proxy, for step 5).
      const survivor = [...nodes.keys()][0]!
      const sessionsBefore = ledger.sessions().length
      const t3 = Date.now()
      nodes.set("n4", yield* startNode("n4"))
      nodes.set("n5", yield* startNode("n5", true))
      yield* poll("networks moved to the new nodes", 30_000, async () => {
        const n4 = await Effect.runPromise(connectedOn(nodes.get("n4")!))
        const n5 = await Effect.runPromise(connectedOn(nodes.get("n5")!))
        return n4 > 0 && n5 > 0 && ledger.liveNetworks().size === NETWORKS ? true : undefined
      })
      yield* log(`two nodes joined: ${ledger.sessions().length - sessionsBefore} networks moved in ${Date.now() - t3} ms`)
      yield* check("two nodes joined")

      // 4. SIGTERM of the node that held everything: hands over, exits within 20 s.
      const t4 = Date.now()
      const code = yield* nodes.get(survivor)!.stop("SIGTERM")
      const exitMs = Date.now() - t4
      nodes.delete(survivor)
      expect(exitMs).toBeLessThan(EXIT_BOUND_MS)
      yield* allLive("SIGTERM handover")
      yield* log(`SIGTERM (${survivor}): exit ${code} after ${exitMs} ms; all connected after ${Date.now() - t4} ms`)
      yield* check("SIGTERM")

      // 5. n5's PostgreSQL link black-holed: its sessions close; nobody opens them while its locks are held.
      const n5 = nodes.get("n5")!
      const held = yield* connectedOn(n5)
      expect(held).toBeGreaterThan(0)
      const t5 = Date.now()
      proxy.blackHole()
      yield* poll("n5's sessions closed", 30_000, async () =>
        ledger.liveNetworks().size <= NETWORKS - held ? true : undefined)
      // The sessions that closed meanwhile are n5's: its lines since the cut could not be stored.
      faults.push({ at: t5, closingMs: Date.now() - t5 + 500 })
      yield* log(`black hole: n5's ${held} sessions closed after ${Date.now() - t5} ms`)
      expect(ledger.duplicates()).toEqual([])
      // SIGTERM without its database: still exits within 20 s.
      const t5b = Date.now()
      yield* n5.stop("SIGTERM")
      const exitBlind = Date.now() - t5b
      nodes.delete("n5")
      expect(exitBlind).toBeLessThan(EXIT_BOUND_MS)
      // Its sessions on the server (the proxy keeps them open) end as a dead host's would; n4 takes over.
      const t5c = Date.now()
      proxy.endUpstream()
      yield* allLive("after the black-holed node's sessions ended")
      yield* log(`black hole: SIGTERM exit after ${exitBlind} ms; n4 holds all after ${Date.now() - t5c} ms`)
      yield* check("black hole")

      // The history: every fed line that reached a node stored exactly once.
      for (const node of nodes.values()) yield* node.stop("SIGTERM")
      nodes.clear()
      const stored = yield* storedTexts(databaseUrl, "feeder")
      const counts = new Map<string, number>()
      for (const text of stored) counts.set(text, (counts.get(text) ?? 0) + 1)
      const twice = [...counts].filter(([text, n]) => n > 1 && !text.startsWith("mcp-"))
      // A line is owed to the history when it reached a node (acked), unless that node was killed or cut off from
      // its database within a second after: the line's session was open at the fault and closed in its aftermath.
      const fed = ledger.fed()
      const lostToFault = (line: (typeof fed)[number]) =>
        faults.some(({ at, closingMs }) => {
          const closedAt = line.session.closedAt
          return line.session.openedAt <= at && closedAt !== undefined && closedAt >= at - 100 &&
            closedAt <= at + closingMs && line.ackedAt! >= at - 1_000
        })
      const required = fed.filter((line) => line.ackedAt !== undefined && !lostToFault(line))
      const missing = required.filter((line) => !counts.has(line.text)).map((line) => line.text)
      yield* log(
        `history: ${fed.length} lines fed (${fed.filter((l) => l.ackedAt === undefined).length} never reached a node, ` +
          `${fed.filter((l) => l.ackedAt !== undefined && lostToFault(l)).length} reached one just before its fault), ` +
          `${required.length} required, ${counts.size} stored, ` +
          `${missing.length} missing, ${twice.length} stored twice; test took ${Date.now() - started} ms`
      )
      expect(twice).toEqual([])
      expect(missing).toEqual([])
      expect(ledger.duplicates()).toEqual([])
    }), { timeout: 420_000 })
})
