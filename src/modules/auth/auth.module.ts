import { Module } from '@nestjs/common';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeyService } from './api-key.service';

@Module({ providers: [ApiKeyService, ApiKeyGuard], exports: [ApiKeyService, ApiKeyGuard] })
export class AuthModule {}
