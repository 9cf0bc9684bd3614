/**
 * Route validators (Ajv) and response serialisers (fast-json-stringify), compiled when first
 * needed instead of all before the server listens.
 *
 * How it works: while Fastify gets ready it asks the schema controller's compiler factories for
 * one function per route part (body, params, querystring, headers) and per response status, and
 * compiling all of them was the largest single cost of start-up after loading modules (about a
 * fifth of its CPU; docs/performance.md, "Start-up on an existing database"). The factories here
 * are Fastify's own (@fastify/ajv-compiler, @fastify/fast-json-stringify-compiler, with the same
 * options), wrapped: each route part gets a stand-in at once, which compiles the real function the
 * first time a request reaches it and from then on calls it directly. What a request sees does
 * not change: the same Ajv instance and options, the same errors (`.errors` is the real function's),
 * the same serialised bytes.
 *
 * `compileNext()` compiles one stand-in that no request has needed yet; `cds serve` calls it
 * after it listens, one per turn of the event loop (app/warm-up.ts), so shortly after ready every
 * route is compiled as before and no request pays for it, while a request that arrives earlier
 * waits for one route part at most. `compileAll()` is for tests: a schema that Ajv refuses must
 * still fail a test, as it used to fail `buildApp`.
 */
import AjvCompiler from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

type Validate = ((data: unknown, context?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown };
type Serialize = (payload: unknown) => string;
interface RouteSchema {
  schema: unknown;
  httpPart?: string;
  [key: string]: unknown;
}
type Compile<F> = (routeSchema: RouteSchema) => F;
type ValidatorBuilder = (externalSchemas: unknown, options: unknown) => Compile<Validate>;
type SerializerBuilder = (externalSchemas: unknown, options: unknown) => Compile<Serialize>;

export interface LazyCompilers {
  /** Fastify's `schemaController.compilersFactory` option. */
  factories: CompilersFactory;
  /**
   * Compiles one route part no request has needed yet (the first declared, or the first whose label
   * `only` accepts) and says which ("POST /v1/decisions/bnpl body"); null when none is left.
   */
  compileNext(only?: (label: string) => boolean): string | null;
  /** Compiles every route part still pending (tests: a schema error fails there). */
  compileAll(): void;
  /** How many route parts are still waiting to be compiled. */
  pending(): number;
}

/**
 * Fastify lower-cases the property names of a `headers` schema for its own compiler only (request
 * headers arrive lower-cased), and a factory given in `compilersFactory` counts as custom. Our
 * header schemas use `properties` and `required`; those are lower-cased here as Fastify would.
 */
function lowerCaseHeaders(schema: unknown): unknown {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  const s = schema as { properties?: Record<string, unknown>; required?: string[] };
  return {
    ...s,
    ...(s.properties ? { properties: Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k.toLowerCase(), v])) } : {}),
    ...(Array.isArray(s.required) ? { required: s.required.map((k) => k.toLowerCase()) } : {}),
  };
}

export function createLazyCompilers(): LazyCompilers {
  // Stand-ins not compiled yet, oldest first (the order routes were declared), with what they are for.
  const queue = new Map<() => void, string>();

  /**
   * A route part's real function, built by `build` the first time `get()` is called (by a request
   * or by compileNext) and kept; queued under `label` until then.
   */
  function deferred<F>(label: string, build: () => F): { get(): F; ifCompiled(): F | null } {
    let real: F | null = null;
    const compile = (): F => {
      if (real !== null) return real;
      queue.delete(compile);
      real = build();
      return real;
    };
    queue.set(compile, label);
    return { get: compile, ifCompiled: () => real };
  }
  const ajvCompilers = AjvCompiler() as unknown as ValidatorBuilder;
  const serializerCompilers = SerializerSelector() as unknown as SerializerBuilder;

  // The Ajv instance itself (formats, the shared Error schema) is made when Fastify asks for the
  // factory, before listening, as before: every first request of a route would otherwise wait for it.
  const buildValidator: ValidatorBuilder = (externalSchemas, options) => {
    const compiler = ajvCompilers(externalSchemas, options);
    return (routeSchema) => {
      const part = routeSchema.httpPart === 'headers' ? { ...routeSchema, schema: lowerCaseHeaders(routeSchema.schema) } : routeSchema;
      const real = deferred(`${String(routeSchema.method)} ${String(routeSchema.url)} ${String(routeSchema.httpPart)}`, () => compiler(part));
      const validate: Validate = function (this: unknown, data: unknown, context?: unknown) {
        return real.get().call(this, data, context);
      };
      // Fastify passes Ajv's data context (parent object and property) when the function has a
      // `schemaEnv`, and reads the failures from `.errors`: both as the real function has them.
      Object.defineProperty(validate, 'schemaEnv', { get: () => real.get().schemaEnv });
      Object.defineProperty(validate, 'errors', { get: () => real.ifCompiled()?.errors });
      return validate;
    };
  };

  const buildSerializer: SerializerBuilder = (externalSchemas, options) => {
    const compiler = serializerCompilers(externalSchemas, options);
    return (routeSchema) => {
      const real = deferred(`${String(routeSchema.method)} ${String(routeSchema.url)} response ${String(routeSchema.httpStatus)}`, () => compiler(routeSchema));
      return (payload) => real.get()(payload);
    };
  };

  const compileNext = (only?: (label: string) => boolean): string | null => {
    let next: [() => void, string] | undefined;
    for (const entry of queue) {
      if (only === undefined || only(entry[1])) {
        next = entry;
        break;
      }
    }
    if (next === undefined) return null;
    const [compile, label] = next;
    try {
      compile();
    } catch (err) {
      throw new Error(`compiling the schema of ${label} failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    return label;
  };

  return {
    // Our stand-ins take and return what Fastify's own factories do; their declared types are narrower.
    factories: { buildValidator, buildSerializer } as unknown as CompilersFactory,
    compileNext,
    compileAll() {
      while (compileNext() !== null);
    },
    pending: () => queue.size,
  };
}
