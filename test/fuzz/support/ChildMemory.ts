/**
 * The memory of a `belay serve` child process, measured from outside: the child runs with `--inspect=127.0.0.1:0`,
 * and this module asks its inspector for full garbage collections (HeapProfiler.collectGarbage) and then for
 * `process.memoryUsage()`, so the heap figure is what is still reachable, not what the collector has yet to free.
 * One inspector session per measurement; nothing stays attached.
 */
import WebSocket from "ws"

export interface MemoryFigures {
  readonly rss: number
  readonly heapUsed: number
  readonly heapTotal: number
  readonly external: number
  readonly arrayBuffers: number
}

/** The inspector's WebSocket URL, from the "Debugger listening on ws://…" line node writes to stderr. */
export const inspectorUrl = (output: string): string | undefined => /Debugger listening on (ws:\/\/\S+)/.exec(output)?.[1]

export const measureAfterGc = (url: string): Promise<MemoryFigures> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(url)
    let nextId = 0
    const pending = new Map<number, (result: unknown) => void>()
    const call = (method: string, params: Record<string, unknown> = {}) =>
      new Promise<unknown>((done) => {
        const id = ++nextId
        pending.set(id, done)
        ws.send(JSON.stringify({ id, method, params }))
      })
    ws.on("message", (data) => {
      const message = JSON.parse(String(data)) as { id?: number; result?: unknown }
      if (message.id !== undefined) pending.get(message.id)?.(message.result)
    })
    ws.on("error", reject)
    ws.on("open", async () => {
      try {
        // Several rounds: weak references and finalizers freed by one collection let the next free more.
        for (let i = 0; i < 4; i++) {
          await call("HeapProfiler.collectGarbage")
          await new Promise((r) => setTimeout(r, 100))
        }
        const evaluated = await call("Runtime.evaluate", { expression: "JSON.stringify(process.memoryUsage())", returnByValue: true }) as {
          result: { value: string }
        }
        resolve(JSON.parse(evaluated.result.value) as MemoryFigures)
      } catch (error) {
        reject(error)
      } finally {
        ws.close()
      }
    })
  })

export const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`
