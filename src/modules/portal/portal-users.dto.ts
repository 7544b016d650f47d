import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { PORTAL_ROLES, type PortalRole } from './portal-user.entity';

/** POST /admin/api/partners/:id/users. Email shape and password length are PortalUsersService's rules. */
export class CreatePortalUserDto {
  @IsString() @MaxLength(254) email: string;
  @IsString() @MaxLength(1000) password: string;
  /** Default `admin`: an operator creates the partner's account holders; they invite the rest. */
  @IsOptional() @IsIn(PORTAL_ROLES) role?: PortalRole;
}
