/**
 * The floor NestJS on Express sets on this machine, whatever the service does: one handler that runs the
 * same primary-key SELECT as the bare baseline and returns it, with no guard, pipe, interceptor, Redis or
 * logging — against the bare Node http + pg server doing the same. Run after `npm run bench` (it reads a row
 * of prs_bench): `node -r @swc-node/register bench/framework-floor.ts`.
 * Measured 2026-11-22: bare ≈ 10.5k req/s, empty Nest handler ≈ 4.5k req/s (0.43), the service's GET 0.29.
 */
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { Controller, Get, Module, Param } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import autocannon from 'autocannon';
import { Pool } from 'pg';

const DB = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/prs_bench';
const PORT = 4555;

async function serve(mode: 'bare' | 'nest'): Promise<void> {
  const pool = new Pool({ connectionString: DB, max: 20 });
  const read = (id: string) =>
    pool.query({ name: 'by_id', text: 'SELECT * FROM payment_requests WHERE id = $1', values: [id] }).then((r) => r.rows[0]);
  if (mode === 'bare') {
    http
      .createServer(async (req, res) => {
        const row = await read(req.url!.split('/')[2]);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ok: true, ...row }));
      })
      .listen(PORT, '127.0.0.1');
    return;
  }
  @Controller()
  class Floor {
    @Get('x/:id')
    async x(@Param('id') id: string) {
      return { ok: true, ...(await read(id)) };
    }
  }
  @Module({ controllers: [Floor] })
  class FloorModule {}
  const app = await NestFactory.create(FloorModule, { logger: false });
  await app.listen(PORT, '127.0.0.1');
}

async function measure(mode: 'bare' | 'nest', id: string): Promise<number> {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', __filename, '--serve', mode], { stdio: 'inherit' });
  await new Promise((r) => setTimeout(r, 3000));
  const url = `http://127.0.0.1:${PORT}/x/${id}`;
  await autocannon({ url, connections: 50, duration: 2 });
  const result = await autocannon({ url, connections: 50, duration: 10 });
  child.kill();
  await new Promise((r) => child.once('exit', r));
  return result.requests.average;
}

async function main(): Promise<void> {
  if (process.argv[2] === '--serve') return serve(process.argv[3] as 'bare' | 'nest');
  const pool = new Pool({ connectionString: DB, max: 1 });
  const { rows } = await pool.query('SELECT id FROM payment_requests LIMIT 1');
  await pool.end();
  if (!rows[0]) throw new Error('no row in payment_requests: run npm run bench first');
  const bare = await measure('bare', rows[0].id);
  const nest = await measure('nest', rows[0].id);
  console.log(JSON.stringify({ bare: Math.round(bare), nest: Math.round(nest), ratio: +(nest / bare).toFixed(2) }));
}

void main();
