import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Option } from "effect"
import { appSettings, describeConfigError } from "../../src/services/AppConfig.js"
import { settingsFrom } from "../support/TestDatabase.js"

const load = (env: Record<string, string>) =>
  Effect.withConfigProvider(appSettings, ConfigProvider.fromMap(new Map(Object.entries(env)))).pipe(Effect.either)

describe("AppConfig", () => {
  it.effect("defaults match docs/decisions/README.md", () =>
    Effect.gen(function*() {
      const s = yield* settingsFrom({ LOG_FORMAT: "json" })
      expect(s.host).toBe("127.0.0.1")
      expect(s.port).toBe(8080)
      expect(Option.isNone(s.databaseUrl)).toBe(true)
      expect(s.dataDir.endsWith("/data")).toBe(true)
      expect(s.adminSocket).toBe(`${s.dataDir}/belay.sock`)
      expect(s.trustProxy).toBe(false)
      expect(s.hosted).toBe(false)
      expect(Option.isNone(s.allowedHosts)).toBe(true)
    }))

  it.effect("PUBLIC_BASE_URL keeps the origin without a trailing slash", () =>
    Effect.gen(function*() {
      const s = yield* settingsFrom({ PUBLIC_BASE_URL: "https://belay.example.org/" })
      expect(s.publicBaseUrl).toEqual(Option.some("https://belay.example.org"))
    }))

  it.effect.each([
    ["non-numeric port", { PORT: "abc" }, "PORT"],
    ["port out of range", { PORT: "70000" }, "PORT"],
    ["PUBLIC_BASE_URL with a path", { PUBLIC_BASE_URL: "https://example.org/belay" }, "PUBLIC_BASE_URL"],
    ["PUBLIC_BASE_URL not a URL", { PUBLIC_BASE_URL: "example.org" }, "PUBLIC_BASE_URL"],
    ["hosted without PUBLIC_BASE_URL", { BELAY_HOSTED: "true", BELAY_SERVER_NAME: "srv1" }, "PUBLIC_BASE_URL"],
    ["hosted without BELAY_SERVER_NAME", { BELAY_HOSTED: "true", PUBLIC_BASE_URL: "https://belay.example.org" }, "BELAY_SERVER_NAME"],
    ["bad boolean", { BELAY_TRUST_PROXY: "maybe" }, "BELAY_TRUST_PROXY"],
    ["bad log level", { LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    ["bad server name", { BELAY_SERVER_NAME: "a b" }, "BELAY_SERVER_NAME"],
    ["cluster address without a port", { BELAY_CLUSTER_ADDRESS: "node1.internal" }, "BELAY_CLUSTER_ADDRESS"],
    ["cluster address with port 0", { BELAY_CLUSTER_ADDRESS: "node1.internal:0" }, "BELAY_CLUSTER_ADDRESS"],
    ["cluster address with a path", { BELAY_CLUSTER_ADDRESS: "node1/x:34431" }, "BELAY_CLUSTER_ADDRESS"],
    ["cluster address without a port", { BELAY_CLUSTER_ADDRESS: "node1", DATABASE_URL: "postgres://db/belay" }, "BELAY_CLUSTER_ADDRESS"],
    ["cluster address port out of range", { BELAY_CLUSTER_ADDRESS: "node1:70000", DATABASE_URL: "postgres://db/belay" }, "BELAY_CLUSTER_ADDRESS"],
    ["cluster address without DATABASE_URL", { BELAY_CLUSTER_ADDRESS: "node1:7001", BELAY_SECRET_KEY: "k" }, "DATABASE_URL"],
    ["cluster address without BELAY_SECRET_KEY", { BELAY_CLUSTER_ADDRESS: "node1:7001", DATABASE_URL: "postgres://db/belay" }, "BELAY_SECRET_KEY"],
    ["a direct port out of range", { BELAY_CLUSTER_DIRECT_PORT: "70000" }, "BELAY_CLUSTER_DIRECT_PORT"],
    ["a direct port that is no number", { BELAY_CLUSTER_DIRECT_PORT: "next" }, "BELAY_CLUSTER_DIRECT_PORT"]
  ] as const)("refuses %s with one line naming the variable", ([, env, variable]) =>
    Effect.gen(function*() {
      const result = yield* load(env)
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        const line = describeConfigError(result.left)
        expect(line).toContain(variable)
        expect(line.includes("\n")).toBe(false)
      }
    }))

  it.effect("BELAY_CLUSTER_ADDRESS is host and port; unset, the process is one node alone", () =>
    Effect.gen(function*() {
      expect((yield* settingsFrom({})).clusterAddress).toEqual(Option.none())
      const node = { DATABASE_URL: "postgres://db/belay", BELAY_SECRET_KEY: "ab".repeat(32) }
      expect((yield* settingsFrom({ ...node, BELAY_CLUSTER_ADDRESS: "10.0.0.7:34431" })).clusterAddress)
        .toEqual(Option.some({ host: "10.0.0.7", port: 34431 }))
      expect((yield* settingsFrom({ ...node, BELAY_CLUSTER_ADDRESS: "[fd00::7]:34431" })).clusterAddress)
        .toEqual(Option.some({ host: "fd00::7", port: 34431 }))
    }))

  it.effect("BELAY_CLUSTER_DIRECT_PORT is a port; unset, 0 (a free port)", () =>
    Effect.gen(function*() {
      expect((yield* settingsFrom({})).clusterDirectPort).toBe(0)
      expect((yield* settingsFrom({ BELAY_CLUSTER_DIRECT_PORT: "7101" })).clusterDirectPort).toBe(7101)
    }))

  it.effect("a hosted deployment starts with PUBLIC_BASE_URL and BELAY_SERVER_NAME", () =>
    Effect.gen(function*() {
      const s = yield* settingsFrom({ BELAY_HOSTED: "true", PUBLIC_BASE_URL: "https://belay.example.org", BELAY_SERVER_NAME: "srv1" })
      expect(s.hosted).toBe(true)
      expect(s.serverName).toEqual(Option.some("srv1"))
    }))

  it.effect("BELAY_CLUSTER_ADDRESS names the runner's host and port; unset, the process runs alone", () =>
    Effect.gen(function*() {
      const cluster = { DATABASE_URL: "postgres://db/belay", BELAY_SECRET_KEY: "k" }
      expect((yield* settingsFrom({ ...cluster, BELAY_CLUSTER_ADDRESS: "10.0.0.5:7001" })).clusterAddress).toEqual(
        Option.some({ host: "10.0.0.5", port: 7001 })
      )
      expect((yield* settingsFrom({ ...cluster, BELAY_CLUSTER_ADDRESS: "[fd00::5]:7001" })).clusterAddress).toEqual(
        Option.some({ host: "fd00::5", port: 7001 })
      )
      expect(Option.isNone((yield* settingsFrom(cluster)).clusterAddress)).toBe(true)
    }))

  it.effect("BELAY_ALLOWED_HOSTS is a lower-cased set", () =>
    Effect.gen(function*() {
      const s = yield* settingsFrom({ BELAY_ALLOWED_HOSTS: "IRC.Libera.Chat, irc.oftc.net" })
      expect(Option.map(s.allowedHosts, (h) => [...h])).toEqual(Option.some(["irc.libera.chat", "irc.oftc.net"]))
    }))
})
