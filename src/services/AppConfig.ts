/**
 * AppConfig owns every operator setting of docs/contract.md "Names", read once at start-up
 * through Effect `Config` (so tests swap them with a ConfigProvider). Immutable after
 * construction; safe to share across fibers.
 *
 * A bad value fails with a ConfigError whose message names the variable; `main.ts`
 * prints that one line and exits non-zero.
 */
import * as Path from "node:path"
import { Config, ConfigError, ConfigProvider, Context, Effect, Either, Layer, LogLevel, Option, Redacted } from "effect"
import { type DestinationException, parseExceptions } from "../net/DestinationExceptions.js"
import { parseSourceRange, type SourceRange } from "../net/UpstreamFace.js"

export interface AppSettings {
  readonly host: string
  readonly port: number
  /** An external PostgreSQL when set; otherwise Belay runs its own PostgreSQL server under `dataDir/pg`. */
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly adminSocket: string
  /** An origin (scheme://host[:port]) without a trailing slash. */
  readonly publicBaseUrl: Option.Option<string>
  readonly trustProxy: boolean
  readonly corsOrigins: ReadonlyArray<string>
  readonly hosted: boolean
  readonly serverName: Option.Option<string>
  /** Lower-cased IRC hosts networks may connect to; None means every host is allowed. */
  readonly allowedHosts: Option.Option<ReadonlySet<string>>
  /** 32-byte key for secrets at rest (upstream passwords, FiSH keys); None → generated into dataDir. */
  readonly secretKey: Option.Option<Redacted.Redacted<string>>
  /**
   * BELAY_PUSH_INSECURE_ENDPOINTS: Web Push endpoints may also be http (a local push service); otherwise https only
   * (docs/contract.md "The member's browser surface", REST).
   */
  readonly pushInsecureEndpoints: boolean
  /**
   * BELAY_IRC_LISTEN: where IRC clients connect (docs/contract.md "The IRC client listener"); None: no listener.
   * TLS with `ircTls` (BELAY_IRC_TLS_CERT, BELAY_IRC_TLS_KEY: PEM file paths); without it only on a loopback
   * address, or anywhere with BELAY_IRC_PLAINTEXT=true.
   */
  readonly ircListen: Option.Option<{ readonly host: string; readonly port: number }>
  readonly ircTls: Option.Option<{ readonly certFile: string; readonly keyFile: string }>
  /**
   * BELAY_CLUSTER_ADDRESS: where the other nodes reach this node's cluster runner (it listens there). Some makes the
   * process one node of the cluster of every node on DATABASE_URL (docs/decisions/several-nodes.md "Several nodes"); None runs it
   * alone, as before.
   */
  readonly clusterAddress: Option.Option<{ readonly host: string; readonly port: number }>
  /**
   * BELAY_CLUSTER_DIRECT_PORT: the port of the node's direct command channel, on the host of BELAY_CLUSTER_ADDRESS
   * (docs/contract.md "Settings"); 0, the default, a free port (the other nodes learn it from the network's owner).
   */
  readonly clusterDirectPort: number
  /**
   * BELAY_ACCOUNT_MAX_NETWORKS and BELAY_NETWORK_MAX_CHANNELS: networks per account and channels per network (joined
   * and configured to join) before `belay account limits` overrides them; None: no limit. Hosted, 10 and 50 unless set
   * (docs/decisions/account-limits.md "Networks and channels: hosted defaults, none self-hosted").
   */
  readonly accountMaxNetworks: Option.Option<number>
  readonly networkMaxChannels: Option.Option<number>
  /**
   * BELAY_HISTORY_RETENTION_DAYS: stored lines older than this many days are pruned in small batches; None keeps
   * everything (docs/decisions/account-limits.md "Retention: windows of the oldest ids, one node at a time").
   */
  readonly historyRetentionDays: Option.Option<number>
  /**
   * BELAY_PRIVATE_DESTINATIONS: whether a member's outbound connections (IRC networks, Web Push endpoints, fetches)
   * may reach loopback, private, link-local and other non-public addresses, or the node's own; `deny` by default
   * when hosted, `allow` otherwise (docs/decisions/hosting.md "One destination guard").
   */
  readonly privateDestinations: "deny" | "allow"
  /** BELAY_DESTINATION_EXCEPTIONS: destinations opened even under `deny` (a local ircd, the tests). */
  readonly destinationExceptions: ReadonlyArray<DestinationException>
  /**
   * BELAY_IDENTD_LISTEN: where the RFC 1413 ident server listens, answering each upstream connection with its member's
   * ident (docs/decisions/hosting.md "Each member their own face upstream"); None: no ident server.
   */
  readonly identdListen: Option.Option<{ readonly host: string; readonly port: number }>
  /** BELAY_UPSTREAM_SOURCE: the range each member's upstream connections take their own source address from. */
  readonly upstreamSource: Option.Option<SourceRange>
  /**
   * BELAY_UPLOAD_MAX_BYTES: the largest file one upload may hold (the web composer and `soju.im/FILEHOST`), 25 MiB
   * unless set; BELAY_ACCOUNT_MAX_UPLOAD_MIB: what an account's uploads may hold together, in MiB, before `belay
   * account limits NAME --uploads` overrides it; hosted 256 unless set, else None: no limit
   * (docs/decisions/uploads.md "Limits").
   */
  readonly uploadMaxBytes: number
  readonly accountMaxUploadMib: Option.Option<number>
  readonly logLevel: LogLevel.LogLevel
  readonly logFormat: "pretty" | "json"
}

export class AppConfig extends Context.Tag("belay/AppConfig")<AppConfig, AppSettings>() {}

const invalid = (name: string, message: string) => ConfigError.InvalidData([name], message)

/** PUBLIC_BASE_URL must be an origin: the issuer is derived from it byte for byte (RFC 8414 §2). */
const publicBaseUrl = Config.option(Config.string("PUBLIC_BASE_URL")).pipe(
  Config.mapOrFail((value) => {
    if (Option.isNone(value) || value.value === "") return Either.right(Option.none<string>())
    const raw = value.value
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return Either.left(invalid("PUBLIC_BASE_URL", `PUBLIC_BASE_URL must be an absolute URL, got ${JSON.stringify(raw)}`))
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") {
      return Either.left(invalid("PUBLIC_BASE_URL", "PUBLIC_BASE_URL must use http or https"))
    }
    if ((url.pathname !== "/" && url.pathname !== "") || url.search !== "" || url.hash !== "" || url.username !== "") {
      return Either.left(
        invalid("PUBLIC_BASE_URL", `PUBLIC_BASE_URL must be an origin without a path, got ${JSON.stringify(raw)}`)
      )
    }
    return Either.right(Option.some(url.origin))
  })
)

const commaList = (name: string) =>
  Config.string(name).pipe(
    Config.withDefault(""),
    Config.map((s) => s.split(",").map((x) => x.trim()).filter((x) => x !== ""))
  )

const LOG_LEVELS: Readonly<Record<string, LogLevel.LogLevel>> = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None,
  off: LogLevel.None
}

const logLevel = Config.string("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.mapOrFail((s) => {
    const level = LOG_LEVELS[s.toLowerCase()]
    return level
      ? Either.right(level)
      : Either.left(invalid("LOG_LEVEL", `LOG_LEVEL must be one of trace, debug, info, warning, error, fatal, none; got ${JSON.stringify(s)}`))
  })
)

const strictBoolean = (name: string) =>
  Config.string(name).pipe(
    Config.withDefault("false"),
    Config.mapOrFail((s) => {
      const v = s.trim().toLowerCase()
      if (v === "true" || v === "1" || v === "yes") return Either.right(true)
      if (v === "false" || v === "0" || v === "no" || v === "") return Either.right(false)
      return Either.left(invalid(name, `${name} must be true or false, got ${JSON.stringify(s)}`))
    })
  )

const portNumber = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.mapOrFail((s) => {
      const n = /^\d+$/.test(s) ? Number(s) : NaN
      return Number.isInteger(n) && n >= 0 && n <= 65535
        ? Either.right(n)
        : Either.left(invalid(name, `${name} must be a port number between 0 and 65535, got ${JSON.stringify(s)}`))
    })
  )

const port = portNumber("PORT", "8080")

/** `host:port`, the host a name, an IPv4 address or a bracketed IPv6 address (`[::1]:7001`). */
const clusterAddress = Config.option(Config.string("BELAY_CLUSTER_ADDRESS")).pipe(
  Config.mapOrFail((value) => {
    if (Option.isNone(value) || value.value.trim() === "") return Either.right(Option.none())
    const raw = value.value.trim()
    const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(raw)
    const port = match ? Number(match[3]) : NaN
    const host = match?.[1] ?? match?.[2]
    if (host === undefined || !(port >= 1 && port <= 65535)) {
      return Either.left(
        invalid("BELAY_CLUSTER_ADDRESS", `BELAY_CLUSTER_ADDRESS must be host:port (port 1-65535), got ${JSON.stringify(raw)}`)
      )
    }
    return Either.right(Option.some({ host, port }))
  })
)

/** `host:port`, `[v6]:port`; port 0 picks a free one (tests). */
const ircListen = Config.option(Config.string("BELAY_IRC_LISTEN")).pipe(
  Config.mapOrFail((value) => {
    if (Option.isNone(value) || value.value.trim() === "") return Either.right(Option.none<{ host: string; port: number }>())
    const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(value.value.trim())
    const port = m === null ? NaN : Number(m[3])
    if (m === null || port > 65535) {
      return Either.left(invalid("BELAY_IRC_LISTEN", `BELAY_IRC_LISTEN must be host:port, e.g. 0.0.0.0:6697, got ${JSON.stringify(value.value)}`))
    }
    return Either.right(Option.some({ host: (m[1] ?? m[2])!, port }))
  })
)

/** `host:port`, `[v6]:port`, usually `0.0.0.0:113`; port 0 picks a free one (tests). */
const identdListen = Config.option(Config.string("BELAY_IDENTD_LISTEN")).pipe(
  Config.mapOrFail((value) => {
    if (Option.isNone(value) || value.value.trim() === "") return Either.right(Option.none<{ host: string; port: number }>())
    const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(value.value.trim())
    const port = m === null ? NaN : Number(m[3])
    if (m === null || port > 65535) {
      return Either.left(invalid("BELAY_IDENTD_LISTEN", `BELAY_IDENTD_LISTEN must be host:port, e.g. 0.0.0.0:113, got ${JSON.stringify(value.value)}`))
    }
    return Either.right(Option.some({ host: (m[1] ?? m[2])!, port }))
  })
)

const upstreamSource = Config.option(Config.string("BELAY_UPSTREAM_SOURCE")).pipe(
  Config.mapOrFail((value) => {
    if (Option.isNone(value) || value.value.trim() === "") return Either.right(Option.none<SourceRange>())
    const range = parseSourceRange(value.value)
    return "error" in range
      ? Either.left(invalid("BELAY_UPSTREAM_SOURCE", `BELAY_UPSTREAM_SOURCE ${range.error}`))
      : Either.right(Option.some(range))
  })
)

/**
 * A count limit: a whole number (0 allows none), `unlimited`, or unset (None: the deployment's default applies). The
 * bound keeps the number an integer PostgreSQL and JSON carry exactly.
 */
const countLimit = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Config.mapOrFail((value) => {
      if (Option.isNone(value) || value.value.trim() === "") return Either.right(Option.none<number | "unlimited">())
      const raw = value.value.trim().toLowerCase()
      if (raw === "unlimited") return Either.right(Option.some<number | "unlimited">("unlimited"))
      const n = /^\d{1,7}$/.test(raw) ? Number(raw) : NaN
      return Number.isInteger(n) && n <= 1_000_000
        ? Either.right(Option.some<number | "unlimited">(n))
        : Either.left(invalid(name, `${name} must be a whole number from 0 to 1000000 or unlimited, got ${JSON.stringify(value.value)}`))
    })
  )

/** The setting as given, else the hosted default (docs/contract.md "Names"); `unlimited` is None. */
const resolveLimit = (given: Option.Option<number | "unlimited">, hosted: boolean, hostedDefault: number) =>
  Option.match(given, {
    onNone: () => (hosted ? Option.some(hostedDefault) : Option.none<number>()),
    onSome: (v) => (v === "unlimited" ? Option.none<number>() : Option.some(v))
  })

const retentionDays = Config.option(Config.string("BELAY_HISTORY_RETENTION_DAYS")).pipe(
  Config.mapOrFail((value) => {
    if (Option.isNone(value) || value.value.trim() === "") return Either.right(Option.none<number>())
    const n = /^\d{1,5}$/.test(value.value.trim()) ? Number(value.value.trim()) : NaN
    return n >= 1 && n <= 36_500
      ? Either.right(Option.some(n))
      : Either.left(invalid(
        "BELAY_HISTORY_RETENTION_DAYS",
        `BELAY_HISTORY_RETENTION_DAYS must be a whole number of days from 1 to 36500, got ${JSON.stringify(value.value)}`
      ))
  })
)

/** 1 byte to 1 GiB: the chunks are rows of one transaction, and a file past a gigabyte is not a chat upload. */
const uploadMaxBytes = Config.string("BELAY_UPLOAD_MAX_BYTES").pipe(
  Config.withDefault("26214400"),
  Config.mapOrFail((s) => {
    const n = /^\d{1,10}$/.test(s.trim()) ? Number(s.trim()) : NaN
    return n >= 1 && n <= 1_073_741_824
      ? Either.right(n)
      : Either.left(invalid("BELAY_UPLOAD_MAX_BYTES", `BELAY_UPLOAD_MAX_BYTES must be a whole number of bytes from 1 to 1073741824, got ${JSON.stringify(s)}`))
  })
)

const destinationExceptions = Config.string("BELAY_DESTINATION_EXCEPTIONS").pipe(
  Config.withDefault(""),
  Config.mapOrFail((list) => {
    const parsed = parseExceptions(list)
    return "error" in parsed
      ? Either.left(invalid("BELAY_DESTINATION_EXCEPTIONS", `BELAY_DESTINATION_EXCEPTIONS: ${parsed.error}`))
      : Either.right(parsed.exceptions)
  })
)

/** Loopback hosts, where plaintext IRC needs no opt-in (docs/contract.md "Names"). */
const isLoopback = (host: string) => host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host)

export const appSettings: Config.Config<AppSettings> = Config.all({
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
  port,
  databaseUrl: Config.option(Config.redacted("DATABASE_URL")).pipe(
    Config.map(Option.filter((url) => Redacted.value(url) !== ""))
  ),
  dataDir: Config.string("BELAY_DATA_DIR").pipe(Config.withDefault("./data"), Config.map((d) => Path.resolve(d))),
  adminSocket: Config.option(Config.string("BELAY_ADMIN_SOCKET")),
  publicBaseUrl,
  trustProxy: strictBoolean("BELAY_TRUST_PROXY"),
  corsOrigins: commaList("BELAY_CORS_ORIGINS"),
  hosted: strictBoolean("BELAY_HOSTED"),
  serverName: Config.option(Config.string("BELAY_SERVER_NAME")).pipe(
    Config.mapOrFail((name) =>
      Option.isSome(name) && !/^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$/.test(name.value)
        ? Either.left(invalid("BELAY_SERVER_NAME", "BELAY_SERVER_NAME must be 1-63 letters, digits, dots or hyphens"))
        : Either.right(name)
    )
  ),
  allowedHosts: Config.option(commaList("BELAY_ALLOWED_HOSTS")).pipe(
    Config.map(Option.flatMap((hosts) => hosts.length === 0 ? Option.none() : Option.some(new Set(hosts.map((h) => h.toLowerCase())) as ReadonlySet<string>)))
  ),
  secretKey: Config.option(Config.redacted("BELAY_SECRET_KEY")),
  pushInsecureEndpoints: strictBoolean("BELAY_PUSH_INSECURE_ENDPOINTS"),
  ircListen,
  ircTlsCert: Config.option(Config.string("BELAY_IRC_TLS_CERT")),
  ircTlsKey: Config.option(Config.string("BELAY_IRC_TLS_KEY")),
  ircPlaintext: strictBoolean("BELAY_IRC_PLAINTEXT"),
  logLevel,
  logFormat: Config.option(Config.literal("pretty", "json")("LOG_FORMAT")),
  clusterAddress,
  clusterDirectPort: portNumber("BELAY_CLUSTER_DIRECT_PORT", "0"),
  accountMaxNetworksSetting: countLimit("BELAY_ACCOUNT_MAX_NETWORKS"),
  networkMaxChannelsSetting: countLimit("BELAY_NETWORK_MAX_CHANNELS"),
  historyRetentionDays: retentionDays,
  privateDestinationsSetting: Config.option(Config.literal("deny", "allow")("BELAY_PRIVATE_DESTINATIONS")),
  destinationExceptions,
  identdListen,
  upstreamSource,
  uploadMaxBytes,
  accountMaxUploadMibSetting: countLimit("BELAY_ACCOUNT_MAX_UPLOAD_MIB")
}).pipe(
  Config.mapOrFail((s) => {
    // docs/decisions/several-nodes.md: a hosted deployment needs a fixed issuer and the
    // `<name>~` prefix of its codes and tokens; guessing either would be worse than refusing.
    if (s.hosted && Option.isNone(s.publicBaseUrl)) {
      return Either.left(invalid("BELAY_HOSTED", "BELAY_HOSTED=true requires PUBLIC_BASE_URL"))
    }
    if (s.hosted && Option.isNone(s.serverName)) {
      return Either.left(invalid("BELAY_HOSTED", "BELAY_HOSTED=true requires BELAY_SERVER_NAME"))
    }
    // docs/decisions/several-nodes.md "Several nodes": the nodes meet in one external PostgreSQL (the embedded one is private to
    // its process) and must read each other's stored secrets, so both are required rather than guessed.
    if (Option.isSome(s.clusterAddress) && Option.isNone(s.databaseUrl)) {
      return Either.left(invalid("BELAY_CLUSTER_ADDRESS", "BELAY_CLUSTER_ADDRESS requires DATABASE_URL (the nodes share one PostgreSQL)"))
    }
    if (Option.isSome(s.clusterAddress) && Option.isNone(s.secretKey)) {
      return Either.left(
        invalid("BELAY_CLUSTER_ADDRESS", "BELAY_CLUSTER_ADDRESS requires BELAY_SECRET_KEY (every node must use the same key)")
      )
    }
    const certFile = Option.filter(s.ircTlsCert, (f) => f !== "")
    const keyFile = Option.filter(s.ircTlsKey, (f) => f !== "")
    if (Option.isSome(certFile) !== Option.isSome(keyFile)) {
      return Either.left(invalid("BELAY_IRC_TLS_CERT", "BELAY_IRC_TLS_CERT and BELAY_IRC_TLS_KEY go together"))
    }
    const ircTls = Option.zipWith(certFile, keyFile, (cert, key) => ({ certFile: Path.resolve(cert), keyFile: Path.resolve(key) }))
    if (Option.isSome(s.ircListen) && Option.isNone(ircTls) && !s.ircPlaintext && !isLoopback(s.ircListen.value.host)) {
      return Either.left(invalid(
        "BELAY_IRC_LISTEN",
        "BELAY_IRC_LISTEN on a non-loopback address needs BELAY_IRC_TLS_CERT and BELAY_IRC_TLS_KEY, or BELAY_IRC_PLAINTEXT=true"
      ))
    }
    const { ircTlsCert: _cert, ircTlsKey: _key, ircPlaintext: _plain, ...rest } = s
    const { accountMaxNetworksSetting: _networks, networkMaxChannelsSetting: _channels, ...limited } = rest
    const { privateDestinationsSetting: _destinations, accountMaxUploadMibSetting: _uploads, ...settings } = limited
    return Either.right<AppSettings>({
      ...settings,
      accountMaxNetworks: resolveLimit(s.accountMaxNetworksSetting, s.hosted, 10),
      networkMaxChannels: resolveLimit(s.networkMaxChannelsSetting, s.hosted, 50),
      accountMaxUploadMib: resolveLimit(s.accountMaxUploadMibSetting, s.hosted, 256),
      privateDestinations: Option.getOrElse(s.privateDestinationsSetting, () => (s.hosted ? "deny" : "allow")),
      ircTls,
      adminSocket: Option.getOrElse(s.adminSocket, () => Path.join(s.dataDir, "belay.sock")),
      logFormat: Option.getOrElse(s.logFormat, () => (process.stdout.isTTY ? "pretty" : "json"))
    })
  })
)

export const AppConfigLive = Layer.effect(AppConfig, appSettings)

/** For tests: settings from a plain map, the same validation as production. */
export const appConfigFromMap = (env: Record<string, string>) =>
  Layer.effect(AppConfig, Effect.withConfigProvider(appSettings, ConfigProvider.fromMap(new Map(Object.entries(env)))))

/** One line naming the variable, for start-up failures. */
export const describeConfigError = (error: ConfigError.ConfigError): string => {
  const lines: Array<string> = []
  const walk = (e: ConfigError.ConfigError): void => {
    switch (e._op) {
      case "And":
      case "Or":
        walk(e.left)
        walk(e.right)
        return
      case "InvalidData":
        lines.push(e.message.includes(e.path.join(".")) ? e.message : `${e.path.join(".")}: ${e.message}`)
        return
      case "MissingData":
        lines.push(`${e.path.join(".")} is required: ${e.message}`)
        return
      case "SourceUnavailable":
        lines.push(`${e.path.join(".")}: ${e.message}`)
        return
      case "Unsupported":
        lines.push(`${e.path.join(".")}: ${e.message}`)
        return
    }
  }
  walk(error)
  return `configuration error: ${lines[0] ?? String(error)}`
}
