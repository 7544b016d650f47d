import { Body, Controller, Delete, Get, Param, Post, Query, UseGuards } from '@nestjs/common';
import { BodyCheckGuard } from '../../common/http/body';
import { iso } from '../../common/time';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { CreatePortalUserDto } from './portal-users.dto';
import { PortalUsersService, type PortalUserInfo } from './portal-users.service';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import { AdminActor } from '../audit/admin-actor.decorator';
import type { Actor } from '../audit/audit';
import { NoFields } from '../../common/http/validation';

function userJson(u: PortalUserInfo) {
  return { user_id: u.id, partner_id: u.partnerId, email: u.email, role: u.role, created_at: iso(u.createdAt) };
}

/** Operators manage the partner's portal users (DESIGN §4 style: admin listener, bearer ADMIN_TOKEN). */
@Controller('admin/api')
@UseGuards(AdminTokenGuard, BodyCheckGuard)
export class PortalUsersAdminController {
  constructor(private readonly users: PortalUsersService) {}

  /** → 201 {ok, user_id, partner_id, email, role, created_at}; the password is never echoed. 409 when the email is taken. */
  @Post('partners/:id/users')
  async create(@Param('id', UuidParamPipe) partnerId: string, @Body() dto: CreatePortalUserDto, @AdminActor() actor: Actor) {
    const u = await this.users.create(partnerId, { ...dto, role: dto.role ?? 'admin' }, actor);
    return { ok: true, ...userJson(u) };
  }

  /** → {ok, users: [...]}, oldest first. */
  @Get('partners/:id/users')
  async list(@Param('id', UuidParamPipe) partnerId: string, @Query() _query: NoFields) {
    return { ok: true, users: (await this.users.list(partnerId)).map(userJson) };
  }

  /** → {ok, user_id, removed: true}; their sessions end with them. 409 conflict for the partner's last admin. */
  @Delete('partners/:id/users/:userId')
  async remove(@Param('id', UuidParamPipe) partnerId: string, @Param('userId', UuidParamPipe) userId: string, @AdminActor() actor: Actor, @Body() _body: NoFields) {
    await this.users.remove(partnerId, userId, actor);
    return { ok: true, user_id: userId, removed: true };
  }
}
