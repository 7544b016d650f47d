import { Global, Module } from '@nestjs/common';
import { EventOutbox } from './event-outbox';

/** Webhook events: the outbox every state change writes to; delivery is the worker's. */
@Global()
@Module({ providers: [EventOutbox], exports: [EventOutbox] })
export class WebhooksModule {}
