/**
 * The framework's floor (issue 14 item 4): empty NestJS handlers on Express configured as the service
 * configures it (src/common/http/express-settings.ts, which src/bootstrap.ts uses: no Nest body parser, x-powered-by off,
 * no ETag, TRUST_PROXY as the service reads it, keep-alive timeouts; the service's JSON body parser jsonBody
 * with its 64 kB limit), running the bare baseline's statements (bench/bare-sql.ts): POST / the same INSERT,
 * GET /:id the same SELECT. No guard, pipe, interceptor, Redis, access log or TypeORM: what is left between
 * this and the service is the service's own code. Same wire contract as bench/bare-server.ts.
 */
import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Body, Controller, Get, HttpCode, HttpException, Module, Param, Post, Req } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { expressSettings, serverTimeouts } from '../src/common/http/express-settings';
import { jsonBody, type ParsedRequest } from '../src/common/http/body';
import { trustProxy } from '../src/config/config';
import { baselineSql, UUID } from './bare-sql';

const sql = baselineSql();

@Controller()
class FloorController {
  @Post()
  @HttpCode(201)
  async create(@Req() req: ParsedRequest, @Body() body: unknown) {
    if (req.bodyProblem) throw new HttpException({ ok: false, error: req.bodyProblem }, 400);
    const inserted = sql.insert(body);
    if (!inserted) throw new HttpException({ ok: false, error: 'invalid_request' }, 400);
    return { ok: true, ...(await inserted) };
  }

  @Get(':id')
  async get(@Param('id') id: string) {
    const row = UUID.test(id) ? await sql.select(id) : undefined;
    if (!row) throw new HttpException({ ok: false, error: 'not_found' }, 404);
    return { ok: true, ...row };
  }
}

@Module({ controllers: [FloorController] })
class FloorModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create<NestExpressApplication>(FloorModule, { bodyParser: false, logger: false });
  expressSettings(app, trustProxy(process.env.TRUST_PROXY));
  app.use(jsonBody);
  await app.init();
  const server = app.getHttpServer() as Server;
  serverTimeouts(server);
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    process.send?.({ port });
  });
  process.once('SIGTERM', () => {
    server.closeAllConnections();
    void app.close().then(() => sql.pool.end()).then(() => process.exit(0));
  });
}

main().catch((e: Error) => {
  console.error(`floor server: ${e.stack ?? e.message}`);
  process.exit(1);
});
