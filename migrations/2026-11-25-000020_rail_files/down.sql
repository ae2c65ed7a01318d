DROP TABLE rail_file_numbers;
DROP TABLE rail_file_items;
DROP TABLE rail_files;
