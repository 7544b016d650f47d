import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { NotificationRequestsPort, type NotifiedRequest } from '../../notifications/notification-facts.port';
import { RequestFactsPort } from '../../webhooks/request-facts.port';
import { effectiveStatus } from '../domain/transitions';
import { RequestsRepository } from '../infrastructure/requests.repository';

/** The requests module's side of the read ports of webhooks (a delivery's payload) and notifications (a message). */
@Injectable()
export class RequestFactsService implements RequestFactsPort, NotificationRequestsPort {
  constructor(private readonly repo: RequestsRepository) {}

  factsQuery(requestId: string): string {
    return RequestsRepository.factsQuery(requestId);
  }

  async notifiedRequest(requestId: string, em?: EntityManager): Promise<NotifiedRequest | null> {
    const found = await this.repo.findWithClaimLost(requestId, { em, share: em !== undefined });
    if (!found) return null;
    const r = found.request;
    return {
      claimLost: found.claimLost,
      requestId: r.id,
      partnerId: r.partnerId,
      merchantId: r.merchantId,
      status: effectiveStatus(r, new Date()),
      proofStatus: r.proofStatus,
      testMode: r.testMode,
      fiatAmount: r.fiatAmount,
      fiatCurrency: r.fiatCurrency,
      amount: r.amount,
      chainId: r.chainId,
      tokenAddress: r.tokenAddress,
      txHash: r.txHash,
      expiresAt: r.expiresAt,
      proofVerifiedAt: r.proofVerifiedAt,
    };
  }
}
