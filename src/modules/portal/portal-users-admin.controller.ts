import { Body, Controller, Param, Post, UseGuards } from '@nestjs/common';
import { BodyCheckGuard } from '../../common/http/body';
import { iso } from '../../common/time';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { CreatePortalUserDto } from './portal-users.dto';
import { PortalUsersService } from './portal-users.service';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';

/** Operators create the partner's portal users (DESIGN §4 style: admin listener, bearer ADMIN_TOKEN). */
@Controller('admin/api')
@UseGuards(AdminTokenGuard, BodyCheckGuard)
export class PortalUsersAdminController {
  constructor(private readonly users: PortalUsersService) {}

  /** → 201 {ok, user_id, partner_id, email, created_at}; the password is never echoed. 409 when the email is taken. */
  @Post('partners/:id/users')
  async create(@Param('id', UuidParamPipe) partnerId: string, @Body() dto: CreatePortalUserDto) {
    const u = await this.users.create(partnerId, dto);
    return { ok: true, user_id: u.id, partner_id: u.partnerId, email: u.email, created_at: iso(u.createdAt) };
  }
}
