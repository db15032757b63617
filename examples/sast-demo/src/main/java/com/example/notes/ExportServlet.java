package com.example.notes;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

/** Exports a user's notes to a file and zips it. */
public class ExportServlet extends HttpServlet {

    private static final String EXPORT_DIR = "/var/notes/export";
    private static final String MODE = "zip";

    @Override
    protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String name = request.getParameter("file");

        // the export file name comes from the request as is
        File target = new File(EXPORT_DIR, name + ".txt");
        try (FileOutputStream out = new FileOutputStream(target)) {
            out.write("notes".getBytes());
        }

        // the packer is chosen from a constant mode: the request never reaches it
        String packer;
        switch (MODE) {
            case "zip":
                packer = "/usr/bin/zip";
                break;
            default:
                packer = name;
        }
        List<String> cmd = new ArrayList<>();
        cmd.add(packer);
        cmd.add(name);
        cmd.remove(1);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.start();
    }
}
