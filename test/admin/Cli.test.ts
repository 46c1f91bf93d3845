/**
 * The admin commands end to end, as an operator runs them: `bin/belay serve` in a child
 * process, then `bin/belay …` against its admin socket. Afterwards the database is
 * opened directly to prove what was (and was not) stored.
 */
import * as Child from "node:child_process"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AppConfig } from "../../src/services/AppConfig.js"
import { DatabaseLive } from "../../src/services/storage/Database.js"
import { BIN, runCli, startBelay } from "../support/BelayProcess.js"
import { eventually } from "../support/Eventually.js"
import * as FakeIrcServer from "../support/FakeIrcServer.js"
import { describeMode, settingsFrom, testEnvironment } from "../support/TestDatabase.js"

describe(`belay admin commands on ${describeMode}`, () => {
  it.scoped("manage accounts, networks and tokens; the database holds no raw token or password", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment()
      const belay = yield* startBelay(env)
      const cli = (args: ReadonlyArray<string>, stdin?: string) => runCli(belay.env, args, stdin)

      const added = yield* cli(["account", "add", "alice"], "correct horse battery\n")
      expect(added).toMatchObject({ code: 0, stderr: "" })
      expect((yield* cli(["account", "add", "alice"], "another password\n")).stderr).toBe(
        "belay: an account named \"alice\" already exists\n"
      )
      expect((yield* cli(["account", "add", "bob"], "")).code).not.toBe(0)

      const net = yield* cli([
        "network", "add", "alice", "--name", "libera", "--host", "irc.example.org", "--port", "6697", "--tls",
        "--nick", "alice", "--server-password", "upstream-secret-1", "--sasl-plain", "alice:sasl-secret-2", "--join", "#a,#b"
      ])
      expect(net.code).toBe(0)
      expect(net.stdout).toMatch(/^\d+\n$/)
      const networkId = Number(net.stdout)

      const badPort = yield* cli(["network", "add", "alice", "--name", "x", "--host", "h", "--port", "abc"])
      expect(badPort.code).toBe(2)
      expect(badPort.stderr).toContain("--port")
      const dup = yield* cli(["network", "add", "alice", "--name", "libera", "--host", "h", "--port", "6667"])
      expect(dup).toMatchObject({ code: 1 })
      expect(dup.stderr).toContain("already exists")
      const unknown = yield* cli(["network", "list", "nobody"])
      expect(unknown).toMatchObject({ code: 1, stderr: "belay: no account named \"nobody\"\n" })

      const listed = JSON.parse((yield* cli(["network", "list", "alice", "--json"])).stdout)
      expect(listed).toEqual([
        expect.objectContaining({ id: networkId, name: "libera", host: "irc.example.org", port: 6697, tls: true, hasSasl: true })
      ])
      expect(JSON.stringify(listed)).not.toContain("secret")

      const token = yield* cli(["token", "add", "alice", "--name", "agent", "--scope", "read"])
      expect(token.code).toBe(0)
      const raw = token.stdout.trim()
      expect(raw).toMatch(/^belay_[A-Za-z0-9_-]{43}$/)
      expect((yield* cli(["token", "add", "alice", "--name", "x", "--scope", "admin"])).code).toBe(2)
      expect((yield* cli(["token", "revoke", "alice", "agent"])).code).toBe(0)
      const tokens = JSON.parse((yield* cli(["token", "list", "alice", "--json"])).stdout)
      expect(tokens).toEqual([expect.objectContaining({ name: "agent", scope: "read", revoked: true })])
      expect((yield* cli(["token", "list", "alice"])).stdout).toMatch(/^agent\tread\t\d{4}-\d\d-\d\dT[^\t]+\trevoked\n$/)

      expect((yield* cli(["account", "pause", "alice"])).stdout).toBe("account alice is paused\n")
      const accounts = JSON.parse((yield* cli(["account", "list", "--json"])).stdout)
      expect(accounts).toEqual([expect.objectContaining({ name: "alice", status: "paused" })])
      expect((yield* cli(["account", "list"])).stdout).toBe("alice\tpaused\n")
      expect((yield* cli(["account", "resume", "alice"])).stdout).toBe("account alice is active\n")
      expect((yield* cli(["network", "remove", "alice", String(networkId + 100)])).code).toBe(1)

      // Clean shutdown on SIGTERM, then the stored bytes are inspected directly.
      expect(yield* belay.stop("SIGTERM")).toBe(0)
      expect((yield* cli(["account", "list"])).stderr).toContain("no belay server is running")

      const dump = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const tables = yield* sql<{ name: string }>`
          SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`
        let text = ""
        for (const { name } of tables) {
          const rows = yield* sql.unsafe<Record<string, unknown>>(`SELECT * FROM ${name}`)
          text += JSON.stringify(rows, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : v))
        }
        return text
      }).pipe(Effect.provide(DatabaseLive.pipe(Layer.provide(Layer.effect(AppConfig, settingsFrom(env))))))
      expect(dump).toContain("libera")
      for (const secret of [raw, raw.slice(6), "correct horse battery", "upstream-secret-1", "sasl-secret-2"]) {
        expect(dump).not.toContain(secret)
      }
    }), { timeout: 120_000 })

  it.scoped("channel encrypt/decrypt: bad keys get one clear line and a usage exit; keys never reach the database or the log", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment()
      const belay = yield* startBelay(env)
      const cli = (args: ReadonlyArray<string>, stdin?: string) => runCli(belay.env, args, stdin)
      expect((yield* cli(["account", "add", "alice"], "correct horse battery\n")).code).toBe(0)
      // Port 1 on loopback: the actor's connection fails at once and it waits in backoff, which is all we need.
      const net = yield* cli(["network", "add", "alice", "--name", "n", "--host", "127.0.0.1", "--port", "1"])
      const id = net.stdout.trim()
      expect(id).toMatch(/^\d+$/)

      for (const [stdin, says] of [["", "key is empty"], ["\n", "key is empty"], ["cbc:\n", "the FiSH key is empty"]] as const) {
        const refused = yield* cli(["channel", "encrypt", "alice", id, "#Secret"], stdin)
        expect(refused.code, JSON.stringify(stdin)).toBe(2)
        expect(refused.stdout).toBe("")
        expect(refused.stderr.trim().split("\n")).toHaveLength(1)
        expect(refused.stderr).toContain(says)
      }
      const badTarget = yield* cli(["channel", "encrypt", "alice", id, "#a b"], "k3y\n")
      expect(badTarget).toMatchObject({ code: 1, stderr: "belay: \"#a b\" is not a channel or nick name\n" })
      expect((yield* cli(["channel", "encrypt", "alice", "999", "#x"], "k3y\n")).code).toBe(1)

      const cbcKey = "cbc:Sup3r-Secret-FiSH-key"
      const ok = yield* cli(["channel", "encrypt", "alice", id, "#Secret"], `${cbcKey}\n`)
      expect(ok).toMatchObject({ code: 0, stdout: `#Secret on network ${id} is now end-to-end encrypted\n`, stderr: "" })
      const off = yield* cli(["channel", "decrypt", "alice", id, "#SECRET", "--json"])
      expect(JSON.parse(off.stdout)).toEqual({ decrypted: "#SECRET", changed: true })
      const bareKey = "Bare-Key-Only-Zq9"
      expect((yield* cli(["channel", "encrypt", "alice", id, "bob"], `${bareKey}\n`)).code).toBe(0)

      expect(yield* belay.stop("SIGTERM")).toBe(0)
      const log = belay.output()
      const { rows, dump } = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ target: string; keyEnc: Uint8Array | null }>`
          SELECT target, e2e_key_enc AS "keyEnc" FROM buffers WHERE kind <> 'server' ORDER BY target`
        const tables = yield* sql<{ name: string }>`
          SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`
        let dump = ""
        for (const { name } of tables) {
          const all = yield* sql.unsafe<Record<string, unknown>>(`SELECT * FROM ${name}`)
          dump += JSON.stringify(all, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : v))
        }
        return { rows, dump }
      }).pipe(Effect.provide(DatabaseLive.pipe(Layer.provide(Layer.effect(AppConfig, settingsFrom(env))))))
      expect(rows.map((r) => [r.target, r.keyEnc !== null])).toEqual([["#Secret", false], ["bob", true]])
      for (const secret of ["Sup3r-Secret-FiSH-key", "Bare-Key-Only-Zq9"]) {
        expect(dump).not.toContain(secret)
        expect(log).not.toContain(secret)
      }
    }), { timeout: 120_000 })

  it.scoped("account export: the archive on stdout byte for byte, whole, its end line last; an unknown account exits 1", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment()
      const belay = yield* startBelay(env)
      const cli = (args: ReadonlyArray<string>, stdin?: string) => runCli(belay.env, args, stdin)
      expect((yield* cli(["account", "add", "alice"], "correct horse battery\n")).code).toBe(0)
      const networkId = Number((yield* cli(["network", "add", "alice", "--name", "libera", "--host", "irc.example.org",
        "--port", "6697", "--server-password", "upstream-secret-1"])).stdout)
      // Lines of multi-byte characters, so that the socket's chunks end inside characters.
      const MESSAGES = 3_000
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [buffer] = yield* sql<{ id: number }>`
          INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${networkId}, '#belay', '#belay', 'channel')
          RETURNING id`
        yield* sql`
          INSERT INTO messages (buffer_id, time, kind, nick, text)
          SELECT ${buffer!.id}, now() - (${MESSAGES}::int - i) * interval '1 second', 'privmsg', 'bob',
                 i || ' ' || repeat('é🧗攀', 1 + i % 40)
          FROM generate_series(1, ${MESSAGES}::int) AS i`
      }).pipe(Effect.provide(DatabaseLive.pipe(Layer.provide(Layer.effect(AppConfig, settingsFrom(env))))))

      const exported = yield* Effect.promise(() =>
        new Promise<{ code: number | null; stdout: Buffer; stderr: string }>((resolve) => {
          const child = Child.spawn(process.execPath, [BIN, "account", "export", "alice"], {
            env: { ...process.env, ...belay.env },
            stdio: ["ignore", "pipe", "pipe"]
          })
          const chunks: Array<Buffer> = []
          let stderr = ""
          child.stdout.on("data", (c: Buffer) => chunks.push(c))
          child.stderr.on("data", (c) => (stderr += c))
          child.on("close", (code) => resolve({ code, stdout: Buffer.concat(chunks), stderr }))
        })
      )
      expect(exported).toMatchObject({ code: 0, stderr: "" })
      const text = exported.stdout.toString("utf8")
      // Valid UTF-8 throughout: nothing replaced, and the text encodes back to the very bytes.
      expect(text).not.toContain("\uFFFD")
      expect(Buffer.from(text, "utf8").equals(exported.stdout)).toBe(true)
      const lines = text.trimEnd().split("\n").map((l) => JSON.parse(l) as { kind: string; message?: { target: string; text: string } })
      expect(lines[0]!.kind).toBe("archive")
      expect(lines.at(-1)!.kind).toBe("end")
      // The channel's lines (the server buffer may hold the failed connection's notices too).
      const messages = lines.filter((l) => l.kind === "message" && l.message!.target === "#belay")
      expect(messages.map((m) => m.message!.text)).toEqual(
        Array.from({ length: MESSAGES }, (_, k) => `${k + 1} ${"é🧗攀".repeat(1 + ((k + 1) % 40))}`)
      )
      expect(text).not.toContain("upstream-secret-1")

      expect(yield* cli(["account", "export", "nobody"])).toMatchObject({ code: 1, stdout: "", stderr: "belay: no account named \"nobody\"\n" })
    }), { timeout: 120_000 })

  it.scoped("network list shows each network's state, current nick, next retry and last error, in text and JSON", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment()
      const irc = yield* FakeIrcServer.make()
      const belay = yield* startBelay(env)
      const cli = (args: ReadonlyArray<string>, stdin?: string) => runCli(belay.env, args, stdin)
      expect((yield* cli(["account", "add", "alice"], "correct horse battery\n")).code).toBe(0)
      const up = (yield* cli(["network", "add", "alice", "--name", "up", "--host", "127.0.0.1", "--port", String(irc.port),
        "--nick", "alice"])).stdout.trim()
      // Port 1 on loopback refuses at once: the network waits in backoff with the reason.
      const down = (yield* cli(["network", "add", "alice", "--name", "down", "--host", "127.0.0.1", "--port", "1"])).stdout
        .trim()
      const conn = yield* irc.nextConnection()
      yield* conn.register("alice_")

      const listed = (args: ReadonlyArray<string>) =>
        Effect.map(cli(["network", "list", "alice", ...args]), (r) => r.stdout)
      const json = yield* eventually(
        "both networks settled",
        Effect.map(listed(["--json"]), (out) => JSON.parse(out) as ReadonlyArray<Record<string, unknown>>),
        (rows) => rows.some((r) => r.state === "connected") && rows.some((r) => r.state === "backoff")
      )
      expect(json).toEqual([
        expect.objectContaining({
          id: Number(up),
          name: "up",
          nick: "alice",
          state: "connected",
          currentNick: "alice_",
          lastError: null,
          nextRetryAt: null
        }),
        expect.objectContaining({
          id: Number(down),
          name: "down",
          state: "backoff",
          currentNick: null,
          lastError: expect.stringMatching(/ECONNREFUSED/),
          nextRetryAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        })
      ])

      const lines = (yield* listed([])).trim().split("\n").map((l) => l.split("\t"))
      expect(lines[0]).toEqual([up, "up", `127.0.0.1:${irc.port}`, "connected", "alice_", "-", "-"])
      const [id, name, server, state, nick, retry, error] = lines[1]!
      expect([id, name, server, state, nick]).toEqual([down, "down", "127.0.0.1:1", "backoff", "-"])
      expect(retry).toMatch(/^retry (in \d+ s|due now) \(\d{4}-.*Z\)$/)
      expect(error).toMatch(/^last error: .*ECONNREFUSED/)
    }), { timeout: 120_000 })

  it.scoped("start-up refuses a bad setting with one line naming it", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment()
      for (const [variable, value] of [["PORT", "abc"], ["PUBLIC_BASE_URL", "https://x.example/path"], ["BELAY_HOSTED", "true"]] as const) {
        const result = yield* runCli({ ...env, [variable]: value }, ["serve"])
        expect(result.code).not.toBe(0)
        const lines = result.stderr.trim().split("\n")
        expect(lines).toHaveLength(1)
        expect(lines[0]).toContain(variable)
      }
    }), { timeout: 60_000 })
})
