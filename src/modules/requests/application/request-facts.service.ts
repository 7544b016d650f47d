import { Injectable } from '@nestjs/common';
import { RequestFactsPort, type RequestFacts } from '../../webhooks/request-facts.port';
import { RequestsRepository } from '../infrastructure/requests.repository';

/** The requests module's side of webhooks' read port: what a delivery reads of each request. */
@Injectable()
export class RequestFactsService implements RequestFactsPort {
  constructor(private readonly repo: RequestsRepository) {}

  factsFor(requestIds: readonly string[]): Promise<Map<string, RequestFacts>> {
    return this.repo.factsFor(requestIds);
  }
}
