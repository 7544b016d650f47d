import type { DynamicModule, ForwardReference, Provider, Type } from '@nestjs/common';
import { MODULE_METADATA } from '@nestjs/common/constants';

type Import = Type<unknown> | DynamicModule | Promise<DynamicModule> | ForwardReference;

export function providerToken(p: Provider): unknown {
  return typeof p === 'function' ? p : p.provide;
}

/**
 * Replaces providers of the application's modules by the caller's (`start(config, roles, { overrides })`):
 * the way to plug in one's own ChainReader factory (CHAIN_READERS), rate provider, and so on.
 *
 * Nest resolves a dependency in the module that declares the consumer first, so a provider added to the
 * root module would not reach, say, AssetRegistry inside ChainModule. Instead, each directly imported module
 * that declares an overridden token is swapped for a subclass whose provider list has the override in that
 * token's place (same imports, exports and @Global flag). Overrides of tokens that no imported module
 * declares are returned as `rest`, for the root module's own providers.
 *
 * The swap reaches the modules listed in AppModule's imports. A module that other modules also import by
 * class would exist twice (the swapped one and the original): extension points belong in modules that only
 * AppModule imports (ChainModule is one; global modules need no other importer).
 */
export function withOverrides(imports: Import[], overrides: Provider[]): { imports: Import[]; rest: Provider[] } {
  if (overrides.length === 0) return { imports, rest: [] };
  const byToken = new Map(overrides.map((o) => [providerToken(o), o]));
  const used = new Set<unknown>();
  const swapped = imports.map((imp) => {
    if (typeof imp !== 'function') return imp;
    const declared = (Reflect.getMetadata(MODULE_METADATA.PROVIDERS, imp) ?? []) as Provider[];
    if (!declared.some((p) => byToken.has(providerToken(p)))) return imp;
    const providers = declared.map((p) => {
      const token = providerToken(p);
      if (!byToken.has(token)) return p;
      used.add(token);
      return byToken.get(token)!;
    });
    const Overridden = class extends (imp as Type<object>) {};
    Object.defineProperty(Overridden, 'name', { value: imp.name });
    for (const key of Reflect.getMetadataKeys(imp)) {
      Reflect.defineMetadata(key, Reflect.getMetadata(key, imp), Overridden);
    }
    Reflect.defineMetadata(MODULE_METADATA.PROVIDERS, providers, Overridden);
    return Overridden as Type<unknown>;
  });
  // Fail at start rather than leave the original module, un-overridden, serving its other importers.
  const replaced = imports.filter((imp, i) => swapped[i] !== imp) as Array<Type<unknown>>;
  for (const m of replaced) {
    const importer = importersOf(imports, m)[0];
    if (importer) {
      throw new Error(
        `Cannot override a provider of ${m.name}: ${importer} imports it too, and would keep the original. ` +
          `Let ${m.name} be imported by AppModule only (mark it @Global if others need its exports).`,
      );
    }
  }
  return { imports: swapped, rest: overrides.filter((o) => !used.has(providerToken(o))) };
}

/** Names of the modules, anywhere below `roots`, that import `target` (the roots themselves excluded). */
function importersOf(roots: Import[], target: Type<unknown>): string[] {
  const found = new Set<string>();
  const seen = new Set<unknown>();
  const childrenOf = (imp: Import): { name: string; children: Import[] } | null => {
    if (typeof imp === 'function') {
      return { name: imp.name, children: (Reflect.getMetadata(MODULE_METADATA.IMPORTS, imp) ?? []) as Import[] };
    }
    if (imp && typeof imp === 'object' && 'module' in imp) {
      const own = (Reflect.getMetadata(MODULE_METADATA.IMPORTS, imp.module) ?? []) as Import[];
      return { name: imp.module.name, children: [...own, ...((imp.imports ?? []) as Import[])] };
    }
    return null; // forward references and promises: not followed
  };
  const visit = (imp: Import) => {
    if (seen.has(imp)) return;
    seen.add(imp);
    const node = childrenOf(imp);
    if (!node) return;
    for (const child of node.children) {
      const childClass = typeof child === 'function' ? child : child && typeof child === 'object' && 'module' in child ? child.module : null;
      if (childClass === target) found.add(node.name);
      visit(child);
    }
  };
  roots.forEach(visit);
  return [...found];
}
