-- Identity you can prove (README "Console", SECURITY.md "Console accounts, links and email").
-- console_links gains the kind 'password_reset' (text, no constraint: nothing to alter).
--
-- Invitation links used to be answered to the inviter, who could accept one himself:
-- every invitation still pending was held by someone other than its invitee. They die
-- here; inviters send them again and the new ones are emailed to the invitee.
UPDATE `console_links` SET `revoked_at` = strftime('%Y-%m-%dT%H:%M:%fZ','now')
  WHERE `kind` = 'invite' AND `used_at` IS NULL AND `revoked_at` IS NULL;
--> statement-breakpoint
-- Password-reset throttling counts an email's recent links.
CREATE INDEX `console_links_email` ON `console_links` (`email`,`kind`);
--> statement-breakpoint
-- The local outbox (MAIL_SENDER = "outbox"): what `npm start` and the tests "send".
CREATE TABLE `mail_outbox` (
	`id` text PRIMARY KEY NOT NULL,
	`to` text NOT NULL,
	`subject` text NOT NULL,
	`text` text NOT NULL,
	`link` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `mail_outbox_to` ON `mail_outbox` (`to`,`created_at`);
