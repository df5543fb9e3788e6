-- One table of permissions (src/auth/permissions.ts): API keys carry a scope, and
-- invitations name their inviter by user id. The `viewer` role needs no change here:
-- roles are text, checked by the application's enum.
-- Existing keys keep what they could do (`full`), now bounded by their creator's current role.
ALTER TABLE `api_keys` ADD `scope` text DEFAULT 'full' NOT NULL;--> statement-breakpoint
-- console_links.created_by held the inviter's email; it now holds their user id, so that
-- removing or demoting them revokes their invitations and accepting one re-checks them.
-- An email whose user is gone leaves the row as it was: nobody holds that id, so the
-- invitation can no longer be accepted.
UPDATE `console_links` SET `created_by` = (SELECT `users`.`id` FROM `users` WHERE `users`.`email` = lower(`console_links`.`created_by`))
  WHERE `kind` = 'invite' AND `created_by` LIKE '%@%' AND EXISTS (SELECT 1 FROM `users` WHERE `users`.`email` = lower(`console_links`.`created_by`));--> statement-breakpoint
CREATE INDEX `console_links_created_by` ON `console_links` (`org_id`,`created_by`);
