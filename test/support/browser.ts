import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { getBytes, isHexString, JsonRpcProvider, Network, toQuantity, Wallet } from 'ethers';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * Browser specs drive Debian's Chromium (`apt-get install chromium`; playwright-core never downloads a
 * browser). Each launch() gets a fresh temporary profile (Playwright passes its own --user-data-dir).
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
}

export const ARTIFACTS_DIR = join(__dirname, '..', '..', 'test-artifacts', 'browser');
export const VIEWPORTS = [
  { width: 390, height: 844 },
  { width: 1280, height: 800 },
] as const;

/** Full-page screenshots of the page's current state at phone and desktop size, under test-artifacts/browser/. */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const before = page.viewportSize();
  for (const v of VIEWPORTS) {
    await page.setViewportSize(v);
    await page.screenshot({ path: join(ARTIFACTS_DIR, `${name}-${v.width}x${v.height}.png`), fullPage: true });
  }
  if (before) await page.setViewportSize(before);
}

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export interface WalletCall {
  method: string;
  params: unknown[];
}

/**
 * A browser wallet whose key stays in the test process. The page sees an EIP-1193 `window.ethereum`;
 * every request() crosses to handle() here. Transactions are signed and sent to the local node from here.
 */
export class TestWallet {
  readonly signer: Wallet;
  readonly calls: WalletCall[] = [];
  /** Methods the "user" declines (EIP-1193 4001). */
  readonly declines = new Set<string>();
  /** Chains the wallet has configured; switching to another fails with 4902 until it is added. */
  readonly knownChains: Set<bigint>;
  /** The chain the wallet is on now. */
  chainId: bigint;
  /** The chain of the local node that transactions are sent to. */
  private readonly nodeChainId: bigint;
  private provider: JsonRpcProvider | null = null;

  constructor(
    privateKey: string,
    private readonly rpcUrl: string,
    opts: { chainId?: bigint; knownChains?: bigint[]; nodeChainId?: bigint } = {},
  ) {
    this.signer = new Wallet(privateKey);
    this.nodeChainId = opts.nodeChainId ?? 31337n;
    this.chainId = opts.chainId ?? this.nodeChainId;
    this.knownChains = new Set(opts.knownChains ?? [this.chainId]);
  }

  get address(): string {
    return this.signer.address;
  }

  methods(): string[] {
    return this.calls.map((c) => c.method);
  }

  private connected(): Wallet {
    if (!this.provider) {
      const network = Network.from(this.nodeChainId);
      this.provider = new JsonRpcProvider(this.rpcUrl, network, { staticNetwork: network, cacheTimeout: -1 });
    }
    return this.signer.connect(this.provider);
  }

  async handle(method: string, params: unknown[]): Promise<unknown> {
    this.calls.push({ method, params });
    if (this.declines.has(method)) throw new RpcError(4001, 'User rejected the request.');
    switch (method) {
      case 'eth_requestAccounts':
      case 'eth_accounts':
        return [this.address.toLowerCase()];
      case 'eth_chainId':
        return toQuantity(this.chainId);
      case 'wallet_switchEthereumChain': {
        const target = BigInt((params[0] as { chainId: string }).chainId);
        if (!this.knownChains.has(target)) throw new RpcError(4902, `Unrecognized chain ID ${toQuantity(target)}.`);
        this.chainId = target;
        return null;
      }
      case 'wallet_addEthereumChain': {
        const target = BigInt((params[0] as { chainId: string }).chainId);
        this.knownChains.add(target);
        this.chainId = target;
        return null;
      }
      case 'personal_sign': {
        const [data, account] = params as [string, string];
        if (account.toLowerCase() !== this.address.toLowerCase()) throw new RpcError(4100, 'Unknown account.');
        return this.signer.signMessage(isHexString(data) ? getBytes(data) : data);
      }
      case 'eth_sendTransaction': {
        const tx = params[0] as { from: string; to: string; data?: string; value?: string };
        if (tx.from.toLowerCase() !== this.address.toLowerCase()) throw new RpcError(4100, 'Unknown account.');
        if (this.chainId !== this.nodeChainId) throw new RpcError(-32603, `Wallet is on chain ${this.chainId}, the node is ${this.nodeChainId}.`);
        const sent = await this.connected().sendTransaction({ to: tx.to, data: tx.data, value: tx.value ? BigInt(tx.value) : 0n });
        return sent.hash;
      }
      default:
        throw new RpcError(4200, `Unsupported method ${method}.`);
    }
  }

  close(): void {
    this.provider?.destroy();
    this.provider = null;
  }
}

/** Injects `window.ethereum` into every page of the context, backed by `wallet` in this process. */
export async function attachWallet(context: BrowserContext, wallet: TestWallet): Promise<void> {
  await context.exposeFunction('__testWalletRequest', async (json: string) => {
    const { method, params } = JSON.parse(json) as { method: string; params: unknown[] };
    try {
      return JSON.stringify({ result: (await wallet.handle(method, params)) ?? null });
    } catch (e) {
      const err = e as { code?: number; message?: string };
      return JSON.stringify({ error: { code: typeof err.code === 'number' ? err.code : -32603, message: err.message ?? String(e) } });
    }
  });
  await context.addInitScript(() => {
    const bridge = (window as unknown as { __testWalletRequest(json: string): Promise<string> }).__testWalletRequest;
    const ethereum = {
      isTestWallet: true,
      async request(args: { method: string; params?: unknown[] }) {
        const reply = JSON.parse(await bridge(JSON.stringify({ method: args.method, params: args.params ?? [] })));
        if (reply.error) throw Object.assign(new Error(reply.error.message), { code: reply.error.code });
        return reply.result;
      },
      on() {},
      removeListener() {},
    };
    Object.defineProperty(window, 'ethereum', { value: ethereum, configurable: true });
  });
}

/**
 * A new context (own cookies and storage) and page, optionally with a wallet, collecting what must never
 * happen on these pages: CSP violations and uncaught script errors.
 */
export async function openContext(
  browser: Browser,
  wallet?: TestWallet,
): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: VIEWPORTS[0], deviceScaleFactor: 1 });
  if (wallet) await attachWallet(context, wallet);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return { context, page, problems };
}

/** Waits until the element's text contains `text`. */
export async function waitForText(page: Page, selector: string, text: string, timeout = 20000): Promise<void> {
  await page.locator(selector).filter({ hasText: text }).first().waitFor({ state: 'visible', timeout });
}

/** Form controls with no accessible name from a <label>, aria-label or aria-labelledby (should be none). */
export function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLInputElement>('input, select, textarea'))
      .filter((c) => c.type !== 'hidden' && !c.labels?.length && !c.getAttribute('aria-label') && !c.getAttribute('aria-labelledby'))
      .map((c) => c.id || c.outerHTML),
  );
}
