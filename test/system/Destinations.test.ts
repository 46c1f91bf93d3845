/**
 * A hosted Belay (BELAY_HOSTED=true, so BELAY_PRIVATE_DESTINATIONS=deny) as a stranger would try it: a member adds a
 * network at every literal form of a loopback address, and `localhost`, pointing at a loopback listener of this
 * machine that no exception opens. Each is refused at once over REST with the address and its class, nothing is
 * stored, and the listener sees no connection at all. A network stored before the instance was locked down stays
 * offline with `locked-down:` when the hosted process starts, again without a packet (docs/decisions/hosting.md
 * "One destination guard"; the interface's `locked-down`).
 */
import * as Net from "node:net"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, runCli, startBelay } from "../support/BelayProcess.js"
import { describeMode, testEnvironment } from "../support/TestDatabase.js"

const PASSWORD = "a long enough password"

/** A listener on 127.0.0.1 and ::1 counting every connection made to it. */
const loopbackListener = (port: number) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const accepted: Array<string> = []
      const servers: Array<Net.Server> = []
      for (const host of ["127.0.0.1", "::1"]) {
        const server = Net.createServer((socket) => {
          accepted.push(`${socket.remoteAddress} → ${host}`)
          socket.end("ERROR :not an ircd\r\n")
        })
        await new Promise<void>((resolve) => {
          server.once("error", () => resolve()) // no IPv6 loopback here: the IPv4 one is enough
          server.listen(port, host, () => resolve())
        })
        servers.push(server)
      }
      return { accepted, servers }
    }),
    ({ servers }) => Effect.sync(() => servers.forEach((s) => s.close()))
  )

const FORMS = [
  "127.0.0.1",
  "127.1",
  "0x7f.1",
  "0x7f000001",
  "2130706433",
  "0177.0.0.1",
  "[::1]",
  "::1",
  "[::ffff:127.0.0.1]",
  "localhost",
  "LOCALHOST.",
  "0.0.0.0",
  "0"
]

describe(`destinations on a hosted Belay, ${describeMode}`, () => {
  it.scopedLive("every loopback form is refused naming its class, nothing is stored, and no packet leaves", () =>
    Effect.gen(function*() {
      const ircPort = yield* freePort
      const listener = yield* loopbackListener(ircPort)
      const env = yield* testEnvironment()

      // Self-hosted first (allow): a network on the loopback listener is stored, and connects.
      const open = yield* startBelay({ ...env, BELAY_ADMIN_SOCKET: Path.join(env.BELAY_DATA_DIR!, "a.sock") })
      expect((yield* runCli(open.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
      const added = yield* runCli(open.env, ["network", "add", "alice", "--name", "old", "--host", "127.0.0.1", "--port", String(ircPort)])
      expect(added.code).toBe(0)
      for (let i = 0; i < 100 && listener.accepted.length === 0; i++) yield* Effect.sleep("50 millis")
      expect(listener.accepted.length).toBeGreaterThan(0)
      yield* open.stop()
      yield* Effect.sleep("300 millis")
      listener.accepted.length = 0

      // The same database, hosted: deny by default, and the start-up log says so.
      const port = yield* freePort
      const hosted = yield* startBelay({
        ...env,
        PORT: String(port),
        BELAY_HOSTED: "true",
        PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
        BELAY_SERVER_NAME: "one",
        BELAY_ADMIN_SOCKET: Path.join(env.BELAY_DATA_DIR!, "b.sock")
      })
      expect(hosted.output()).toContain("BELAY_PRIVATE_DESTINATIONS=deny")
      const login = yield* Effect.promise(() =>
        fetch(`${hosted.url}/api/auth/login/token`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "alice", password: PASSWORD })
        }).then((r) => r.json() as Promise<{ access_token: string }>)
      )
      const api = (method: string, path: string, body?: unknown) =>
        Effect.promise(async () => {
          const res = await fetch(`${hosted.url}${path}`, {
            method,
            headers: { authorization: `Bearer ${login.access_token}`, "content-type": "application/json" },
            ...(body === undefined ? {} : { body: JSON.stringify(body) })
          })
          return { status: res.status, body: (await res.json()) as Record<string, unknown> }
        })

      for (const host of FORMS) {
        const res = yield* api("POST", "/api/networks", { name: `n${FORMS.indexOf(host)}`, host, port: ircPort, tls: false, nick: "alice" })
        expect(res.status, host).toBe(400)
        expect(res.body.error).toBe("invalid_request")
        expect(String(res.body.error_description), host).toMatch(/^host: .*(loopback|unspecified)/)
      }
      const listed = yield* api("GET", "/api/networks")
      const networks = listed.body.networks as ReadonlyArray<Record<string, unknown>>
      expect(networks.map((n) => n.name)).toEqual(["old"])
      const old = networks[0]!
      const moved = yield* api("PATCH", `/api/networks/${String(old.id)}`, { host: "[::ffff:127.0.0.1]" })
      expect(moved.status).toBe(400)
      expect(String(moved.body.error_description)).toContain("loopback")

      // The network stored before: offline, locked-down, naming the address and its class; never contacted.
      let lastError = ""
      for (let i = 0; i < 100 && !lastError.startsWith("locked-down:"); i++) {
        yield* Effect.sleep("50 millis")
        const now = ((yield* api("GET", "/api/networks")).body.networks as ReadonlyArray<Record<string, unknown>>)[0]!
        lastError = String((now.status as Record<string, unknown> | undefined)?.lastError ?? now.lastError ?? "")
      }
      expect(lastError).toMatch(/^locked-down: 127\.0\.0\.1 is a loopback address/)
      yield* Effect.sleep("500 millis")
      expect(listener.accepted).toEqual([])
    }), { timeout: 180_000 })
})
