-- Fails while a batch has more than one file of a method: those files cannot become one.
ALTER TABLE rail_files DROP CONSTRAINT rail_files_one_per_batch_method_and_part;
ALTER TABLE rail_files ADD CONSTRAINT rail_files_one_per_batch_and_method UNIQUE (batch_id, method);
ALTER TABLE rail_files DROP COLUMN part;
