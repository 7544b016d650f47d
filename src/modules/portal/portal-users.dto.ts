import { IsString, MaxLength } from 'class-validator';

/** POST /admin/api/partners/:id/users. Email shape and password length are PortalUsersService's rules. */
export class CreatePortalUserDto {
  @IsString() @MaxLength(254) email: string;
  @IsString() @MaxLength(1000) password: string;
}
